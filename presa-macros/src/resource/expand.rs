//! Code for a `#[resource]`: the function unchanged, its item type, the glue building a
//! `presa::Resource` or `presa::ResourceTemplate`, and the registration.

use super::model::{ParamKind, ResourceModel, UriKind};
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, registration, set_description,
};
use crate::common::func::wire_name;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &ResourceModel) -> TokenStream {
    let krate = &m.args.common.krate;
    let fn_name = m.func.name();
    let uri = &m.uri_text;
    let name = &m.name;
    let bindings = bindings(m.params.len());
    let mut states = Vec::new();
    let extracts = m
        .params
        .iter()
        .zip(&bindings)
        .map(|(p, b)| {
            let ty = &p.param.ty;
            match &p.kind {
                ParamKind::Variable(var) => quote_spanned! {ty.span()=>
                    let #b: #ty = __p::template_var::<#ty>(&mut __parts, #var)?;
                },
                ParamKind::Injected => {
                    states.push(quote_spanned! {ty.span()=>
                        if let ::core::option::Option::Some(s) = __p::state_of::<#ty>() {
                            __item = __item.requires_state(s);
                        }
                    });
                    quote_spanned! {ty.span()=>
                        let #b: #ty = __p::inject::<#ty>(&__parts.ctx)?;
                    }
                }
            }
        })
        .collect::<Vec<_>>();
    let call = call_user_fn(krate, &m.func, &bindings);
    let (ctor, registered) = match m.kind {
        UriKind::Template(_) => (
            quote!(#krate::ResourceTemplate::new(#uri, #name)),
            quote!(Template),
        ),
        // A broken template never reaches expansion (its error stops it).
        UriKind::Fixed | UriKind::Broken => {
            (quote!(#krate::Resource::new(#uri, #name)), quote!(Resource))
        }
    };
    let item = format_ident!("__item");
    let description = set_description(&item, m.description.as_deref());
    let common = common_setters(&item, &m.args.common);
    let mime = m
        .args
        .mime_type
        .as_deref()
        .map(|t| quote!(__item = __item.mime_type(#t);));
    let size = m
        .args
        .size
        .as_ref()
        .map(|s| quote!(__item = __item.size(#s);));
    let completes = m.args.complete.iter().map(|(var, provider)| {
        let var = wire_name(var);
        quote! { __item = __item.complete(#var, #provider); }
    });
    let glue = quote! {
        fn __presa_resource() -> #krate::__private::Registered {
            use #krate::__private as __p;
            let mut __item = #ctor.location(::core::concat!(::core::file!(), ":", ::core::line!()));
            #description
            #common
            #mime
            #size
            #(#states)*
            #(#completes)*
            let __item = __item.handler(move |__read: #krate::ResourceRead| async move {
                let mut __parts = __p::ReadParts::from(__read);
                #(#extracts)*
                #call
            });
            __p::Registered::#registered(__item)
        }
    };
    let func = &m.func.item;
    let item = item_type(
        krate,
        &m.func,
        &glue,
        quote!(#fn_name::__presa_resource().add_to(builder)),
    );
    let reg = registration(krate, quote!(#fn_name::__presa_resource()));
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

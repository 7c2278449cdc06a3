//! Code for a `#[resource]`: the function unchanged, its item type, the glue building a
//! `presa::Resource` or `presa::ResourceTemplate`, and the registration.

use super::model::ResourceModel;
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, registration, set_str,
};
use crate::common::func::wire_name;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &ResourceModel) -> TokenStream {
    let func = &m.func.item;
    let fn_name = m.func.name();
    let uri = &m.uri.value;
    let name = &m.name;
    let variables: Vec<String> = m
        .template
        .as_ref()
        .map(|t| t.variables.clone())
        .unwrap_or_default();
    let bindings = bindings(m.func.params.len());
    let mut states = Vec::new();
    let extracts = m
        .func
        .params
        .iter()
        .zip(&bindings)
        .map(|(p, b)| {
            let ty = &p.ty;
            match p.ident.as_ref().map(wire_name) {
                Some(var) if variables.contains(&var) => quote_spanned! {ty.span()=>
                    let #b: #ty = __p::template_var::<#ty>(&mut __parts, #var)?;
                },
                _ => {
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
    let call = call_user_fn(&m.func, &bindings);
    let (ctor, registered) = if m.template.is_some() {
        (
            quote!(::presa::ResourceTemplate::new(#uri, #name)),
            quote!(Template),
        )
    } else {
        (
            quote!(::presa::Resource::new(#uri, #name)),
            quote!(Resource),
        )
    };
    let description = set_str("__item", "description", m.description.as_deref());
    let common = common_setters("__item", &m.args.common);
    let mime = set_str("__item", "mime_type", m.args.mime_type.as_deref());
    let size = m
        .args
        .size
        .as_ref()
        .map(|s| quote!(__item = __item.size(#s);));
    let completes = m.args.complete.iter().map(|(var, provider)| {
        let var = crate::common::func::wire_name(var);
        quote! { __item = __item.complete(#var, #provider); }
    });
    let glue = quote! {
        fn __presa_resource() -> ::presa::__private::Registered {
            use ::presa::__private as __p;
            let mut __item = #ctor.location(::core::concat!(::core::file!(), ":", ::core::line!()));
            #description
            #common
            #mime
            #size
            #(#states)*
            #(#completes)*
            let __item = __item.handler(move |__read: ::presa::ResourceRead| async move {
                let mut __parts = __p::ReadParts::from(__read);
                #(#extracts)*
                #call
            });
            __p::Registered::#registered(__item)
        }
    };
    let item = item_type(
        fn_name,
        &func.vis,
        &glue,
        quote!(#fn_name::__presa_resource().add_to(builder)),
    );
    let reg = registration(quote!(#fn_name::__presa_resource()));
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

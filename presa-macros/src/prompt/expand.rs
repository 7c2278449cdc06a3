//! Code for a `#[prompt]`: the function unchanged, its item type, the glue building a
//! `presa::Prompt`, and the registration.

use super::model::{ParamKind, PromptModel};
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, opt_str, registration, set_description,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &PromptModel) -> TokenStream {
    let krate = &m.args.common.krate;
    let fn_name = m.func.name();
    let name = &m.name.value;
    let meta_idents: Vec<_> = (0..m.params.len())
        .map(|i| format_ident!("__meta_{}", i))
        .collect();
    let metas = m
        .params
        .iter()
        .zip(&meta_idents)
        .filter_map(|(p, mi)| match &p.kind {
            ParamKind::Named {
                wire,
                description,
                title,
            } => {
                let wire = &wire.value;
                let description = opt_str(description.as_deref());
                let title = opt_str(title.as_deref());
                Some(quote! {
                    let #mi = __p::PromptArgMeta { name: #wire, description: #description, title: #title };
                })
            }
            ParamKind::Pattern => None,
        });
    let bindings = bindings(m.params.len());
    let describes = m.params.iter().zip(&meta_idents).map(|(p, mi)| {
        let ty = &p.ty;
        match p.kind {
            ParamKind::Named { .. } => quote_spanned! {ty.span()=>
                (&&&__p::Probe::<#ty>::new()).describe(&mut __args, &#mi);
            },
            ParamKind::Pattern => quote_spanned! {ty.span()=>
                if let ::core::option::Option::Some(s) = __p::state_of::<#ty>() {
                    __item = __item.requires_state(s);
                }
            },
        }
    });
    // The state named parameters need, after every pattern's.
    let states = m.params.iter().filter_map(|p| {
        let ty = &p.ty;
        match p.kind {
            ParamKind::Named { .. } => Some(quote! {
                if let ::core::option::Option::Some(s) = (&&&__p::Probe::<#ty>::new()).state() {
                    __item = __item.requires_state(s);
                }
            }),
            ParamKind::Pattern => None,
        }
    });
    let extracts = m
        .params
        .iter()
        .zip(&meta_idents)
        .zip(&bindings)
        .map(|((p, mi), b)| {
            let ty = &p.ty;
            match p.kind {
                ParamKind::Named { .. } => quote_spanned! {ty.span()=>
                    let #b: #ty = (&&&__p::Probe::<#ty>::new()).extract(&mut __parts, &#mi)?;
                },
                ParamKind::Pattern => quote_spanned! {ty.span()=>
                    let #b: #ty = __p::inject::<#ty>(&__parts.ctx)?;
                },
            }
        });
    let call = call_user_fn(krate, &m.func, &bindings);
    let item = format_ident!("__item");
    let description = set_description(&item, m.description.as_deref());
    let common = common_setters(&item, &m.args.common);
    let completes = m.completions.iter().map(|c| {
        let (wire, provider) = (&c.wire, &c.provider);
        quote! { __item = __item.complete(#wire, #provider); }
    });
    let glue = quote! {
        fn __presa_prompt() -> #krate::Prompt {
            use #krate::__private as __p;
            #[allow(unused_imports)]
            use __p::{PromptViaArg as _, PromptViaInject as _, PromptViaOptional as _};
            #(#metas)*
            let mut __args: ::std::vec::Vec<#krate::PromptArgument> = ::std::vec::Vec::new();
            let mut __item = #krate::Prompt::new(#name)
                .location(::core::concat!(::core::file!(), ":", ::core::line!()));
            #(#describes)*
            #(#states)*
            for __a in __args {
                __item = __item.argument(__a);
            }
            #description
            #common
            #(#completes)*
            __item.handler(move |__get: #krate::PromptGet| async move {
                let mut __parts = __p::PromptParts::from(__get);
                #(#extracts)*
                #call
            })
        }
    };
    let func = &m.func.item;
    let item = item_type(
        krate,
        &m.func,
        &glue,
        quote!(builder.prompt(#fn_name::__presa_prompt())),
    );
    let reg = registration(
        krate,
        quote!(#krate::__private::Registered::Prompt(#fn_name::__presa_prompt())),
    );
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

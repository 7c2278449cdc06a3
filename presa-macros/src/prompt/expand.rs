//! Code for a `#[prompt]`: the function unchanged, its item type, the glue building a
//! `presa::Prompt`, and the registration.

use super::model::PromptModel;
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, opt_str, registration, set_str,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &PromptModel) -> TokenStream {
    let func = &m.func.item;
    let fn_name = m.func.name();
    let name = &m.name.value;
    let metas = m.params.iter().enumerate().map(|(i, p)| {
        let ident = format_ident!("__meta_{}", i);
        let wire = p.wire.as_ref().map(|w| w.value.clone()).unwrap_or_default();
        let description = opt_str(p.description.as_deref());
        let title = opt_str(p.title.as_deref());
        quote! {
            let #ident = __p::PromptArgMeta { name: #wire, description: #description, title: #title };
        }
    });
    let bindings = bindings(m.params.len());
    let describes = m.params.iter().enumerate().map(|(i, p)| {
        let ty = &p.param.ty;
        let mi = format_ident!("__meta_{}", i);
        if p.param.ident.is_some() {
            quote_spanned! {ty.span()=> (&&&__p::Probe::<#ty>::new()).describe(&mut __args, &#mi); }
        } else {
            quote_spanned! {ty.span()=>
                if let ::core::option::Option::Some(s) = __p::state_of::<#ty>() {
                    __item = __item.requires_state(s);
                }
            }
        }
    });
    let states = m
        .params
        .iter()
        .filter(|p| p.param.ident.is_some())
        .map(|p| {
            let ty = &p.param.ty;
            quote! {
                if let ::core::option::Option::Some(s) = (&&&__p::Probe::<#ty>::new()).state() {
                    __item = __item.requires_state(s);
                }
            }
        });
    let extracts = m
        .params
        .iter()
        .enumerate()
        .zip(&bindings)
        .map(|((i, p), b)| {
            let ty = &p.param.ty;
            let mi = format_ident!("__meta_{}", i);
            if p.param.ident.is_some() {
                quote_spanned! {ty.span()=>
                    let #b: #ty = (&&&__p::Probe::<#ty>::new()).extract(&mut __parts, &#mi)?;
                }
            } else {
                quote_spanned! {ty.span()=>
                    let #b: #ty = __p::inject::<#ty>(&__parts.ctx)?;
                }
            }
        });
    let call = call_user_fn(&m.func, &bindings);
    let description = set_str("__item", "description", m.description.as_deref());
    let common = common_setters("__item", &m.args.common);
    let completes = m.args.complete.iter().map(|(arg, provider)| {
        let arg = crate::common::func::wire_name(arg);
        quote! { __item = __item.complete(#arg, #provider); }
    });
    let glue = quote! {
        fn __presa_prompt() -> ::presa::Prompt {
            use ::presa::__private as __p;
            #[allow(unused_imports)]
            use __p::{PromptViaArg as _, PromptViaInject as _, PromptViaOptional as _};
            #(#metas)*
            let mut __args: ::std::vec::Vec<::presa::PromptArgument> = ::std::vec::Vec::new();
            let mut __item = ::presa::Prompt::new(#name)
                .location(::core::concat!(::core::file!(), ":", ::core::line!()));
            #(#describes)*
            #(#states)*
            for __a in __args {
                __item = __item.argument(__a);
            }
            #description
            #common
            #(#completes)*
            __item.handler(move |__get: ::presa::PromptGet| async move {
                let mut __parts = __p::PromptParts::from(__get);
                #(#extracts)*
                #call
            })
        }
    };
    let item = item_type(
        fn_name,
        &func.vis,
        &glue,
        quote!(builder.prompt(#fn_name::__presa_prompt())),
    );
    let reg =
        registration(quote!(::presa::__private::Registered::Prompt(#fn_name::__presa_prompt())));
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

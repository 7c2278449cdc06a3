//! Code for a `#[tool]`, from the model only: the user's function unchanged, a type named
//! like it (so `.add::<name>()` works), the glue that builds the `presa::Tool`, and a
//! registration in the distributed slice.

use super::model::{ParamModel, ToolModel};
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, opt_str, registration, set_str,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &ToolModel) -> TokenStream {
    let func = &m.func.item;
    let fn_name = m.func.name();
    let name = &m.name.value;
    let description = set_str("__tool", "description", m.description.as_deref());
    let common = common_setters("__tool", &m.args.common);

    let metas: Vec<TokenStream> = m.params.iter().map(meta).collect();
    let meta_idents: Vec<_> = (0..m.params.len())
        .map(|i| format_ident!("__meta_{}", i))
        .collect();
    let describes = m.params.iter().zip(&meta_idents).map(|(p, mi)| {
        let ty = &p.param.ty;
        if p.param.ident.is_some() {
            quote_spanned! {ty.span()=>
                (&&&__p::Probe::<#ty>::new()).describe(&mut __schema, &#mi);
            }
        } else {
            quote_spanned! {ty.span()=>
                (&&&__p::Probe::<#ty>::new()).describe_pattern(&mut __schema);
            }
        }
    });
    let bindings = bindings(m.params.len());
    let extracts = m.params.iter().zip(&meta_idents).zip(&bindings).map(|((p, mi), b)| {
        let ty = &p.param.ty;
        if p.param.ident.is_some() {
            quote_spanned! {ty.span()=>
                let #b: #ty = match (&&&__p::Probe::<#ty>::new()).extract(&mut __parts, &#mi) {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(refusal) => return refusal,
                };
            }
        } else {
            quote_spanned! {ty.span()=>
                let #b: #ty = match (&&&__p::Probe::<#ty>::new()).extract_pattern(&mut __parts) {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(refusal) => return refusal,
                };
            }
        }
    });
    let call = call_user_fn(&m.func, &bindings);
    let call = quote! {
        match #call {
            ::core::result::Result::Ok(v) => v,
            ::core::result::Result::Err(e) => return ::core::result::Result::Err(e),
        }
    };
    let output = m.func.output();
    let annotations = annotations(m);
    let live = m
        .args
        .live_notifications
        .then(|| quote! { __tool = __tool.live_notifications(true); });
    let task = m.args.task.as_ref().map(|t| {
        let mode = match t.value.as_str() {
            "optional" => quote!(Optional),
            "required" => quote!(Required),
            _ => quote!(Sync),
        };
        quote! { __tool = __tool.task(::presa::tasks::TaskMode::#mode); }
    });
    let raw_schema = m.args.input_schema.as_ref().map(|s| {
        let text = &s.value;
        quote! {
            __input = __p::serde_json::from_str(#text).unwrap_or(__p::serde_json::Value::Null);
        }
    });

    let glue = quote! {
        fn __presa_tool() -> ::presa::Tool {
            use ::presa::__private as __p;
            #[allow(unused_imports)]
            use __p::{RetDirect as _, RetDisplay as _, ViaArg as _, ViaArgs as _, ViaInject as _};
            #(#metas)*
            let mut __schema = __p::ToolSchema::default();
            #(#describes)*
            let __asks_input = __schema.injects();
            let __conflict = __schema.conflict();
            #[allow(unused_mut)]
            let (mut __input, __states) = __schema.finish();
            #raw_schema
            let mut __tool = ::presa::Tool::new(#name)
                .input_schema(__input)
                .location(::core::concat!(::core::file!(), ":", ::core::line!()))
                .asks_input(__asks_input);
            #description
            #common
            #annotations
            #live
            #task
            for __state in __states {
                __tool = __tool.requires_state(__state);
            }
            if let ::core::option::Option::Some(__why) = __conflict {
                __tool = __p::refuse(__tool, __why);
            }
            if let ::core::option::Option::Some(__out) = (&&&__p::no_value::<#output>()).output_schema() {
                __tool = __tool.output_schema(__out);
            }
            __p::parts_handler(__tool, move |mut __parts: __p::CallParts| async move {
                #(#extracts)*
                let __out = #call;
                (&&&__p::Ret::new(__out)).finish()
            })
        }
    };
    let item = item_type(
        fn_name,
        &func.vis,
        &glue,
        quote!(builder.tool(#fn_name::__presa_tool())),
    );
    let reg = registration(quote!(::presa::__private::Registered::Tool(#fn_name::__presa_tool())));
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

fn meta(p: &ParamModel) -> TokenStream {
    let Some(wire) = &p.wire else {
        return TokenStream::new();
    };
    let wire = &wire.value;
    let description = opt_str(p.description.as_deref());
    let ty = &p.param.ty;
    let header = match &p.param.header {
        Some(h) => quote_spanned! {ty.span()=>
            ::core::option::Option::Some((#h, __p::header_kind::<#ty>()))
        },
        None => quote!(::core::option::Option::None),
    };
    let default = match &p.default {
        Some(expr) => quote! {
            ::core::option::Option::Some(|| {
                let __v: #ty = #expr;
                __p::serde_json::to_value(__v).unwrap_or(__p::serde_json::Value::Null)
            })
        },
        None => quote!(::core::option::Option::None),
    };
    let index = p.index;
    let ident = format_ident!("__meta_{}", index);
    quote! {
        let #ident = __p::ArgMeta {
            name: #wire,
            description: #description,
            header: #header,
            default: #default,
        };
    }
}

fn annotations(m: &ToolModel) -> TokenStream {
    let a = &m.args;
    let set = |v: Option<bool>, method: &str| {
        v.map(|b| {
            let method = format_ident!("{}", method);
            quote!(__annotations = __annotations.#method(#b);)
        })
    };
    let parts: Vec<TokenStream> = [
        set(a.read_only, "read_only"),
        set(a.destructive, "destructive"),
        set(a.idempotent, "idempotent"),
        set(a.open_world, "open_world"),
        a.annotation_title
            .as_ref()
            .map(|t| quote!(__annotations = __annotations.title(#t);)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        return TokenStream::new();
    }
    quote! {
        let mut __annotations = ::presa::ToolAnnotations::new();
        #(#parts)*
        __tool = __tool.annotations(__annotations);
    }
}

//! Code for a `#[tool]`, from the model only: the user's function unchanged, a type named
//! like it (so `.add::<name>()` works), the glue that builds the `presa::Tool`, and a
//! registration in the distributed slice.

use super::model::{NamedParam, ParamKind, ToolModel};
use super::parse::{Annotations, Task, TaskMode};
use crate::common::crate_path::CratePath;
use crate::common::expand::{
    bindings, call_user_fn, common_setters, item_type, opt_str, registration, set_description,
};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(m: &ToolModel) -> TokenStream {
    let krate = &m.args.common.krate;
    let func = &m.func.item;
    let fn_name = m.func.name();
    let name = &m.name.value;
    let tool = format_ident!("__tool");
    let description = set_description(&tool, m.description.as_deref());
    let common = common_setters(&tool, &m.args.common);

    let meta_idents: Vec<_> = (0..m.params.len())
        .map(|i| format_ident!("__meta_{}", i))
        .collect();
    let metas = m
        .params
        .iter()
        .zip(&meta_idents)
        .filter_map(|(p, mi)| match &p.kind {
            ParamKind::Named(n) => Some(meta(mi, &p.ty, n)),
            ParamKind::Pattern => None,
        });
    // The probe's rungs: `Args<T>`, injected, an argument, and a last one whose bound
    // fails with presa's message at the parameter's type.
    let describes = m.params.iter().zip(&meta_idents).map(|(p, mi)| {
        let ty = &p.ty;
        match p.kind {
            ParamKind::Named(_) => quote_spanned! {ty.span()=>
                (&&&&__p::Probe::<#ty>::new()).describe(&mut __schema, &#mi);
            },
            ParamKind::Pattern => quote_spanned! {ty.span()=>
                (&&&&__p::Probe::<#ty>::new()).describe_pattern(&mut __schema);
            },
        }
    });
    let bindings = bindings(m.params.len());
    let extracts = m
        .params
        .iter()
        .zip(&meta_idents)
        .zip(&bindings)
        .map(|((p, mi), b)| {
            let ty = &p.ty;
            let take = match p.kind {
                ParamKind::Named(_) => quote_spanned! {ty.span()=>
                    (&&&&__p::Probe::<#ty>::new()).extract(&mut __parts, &#mi)
                },
                ParamKind::Pattern => quote_spanned! {ty.span()=>
                    (&&&&__p::Probe::<#ty>::new()).extract_pattern(&mut __parts)
                },
            };
            quote_spanned! {ty.span()=>
                let #b: #ty = match #take {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(refusal) => return refusal,
                };
            }
        });
    let call = call_user_fn(krate, &m.func, &bindings);
    let call = quote! {
        match #call {
            ::core::result::Result::Ok(v) => v,
            ::core::result::Result::Err(e) => return ::core::result::Result::Err(e),
        }
    };
    let output = m.func.output();
    let annotations = annotations(krate, &m.args.annotations);
    let live = m
        .args
        .live_notifications
        .then(|| quote! { __tool = __tool.live_notifications(true); });
    let task = m.args.task.map(|t| task(krate, t));
    let raw_schema = m.args.input_schema.as_ref().map(|s| {
        let text = &s.value;
        quote! {
            __input = __p::serde_json::from_str(#text).unwrap_or(__p::serde_json::Value::Null);
        }
    });

    let glue = quote! {
        fn __presa_tool() -> #krate::Tool {
            use #krate::__private as __p;
            #[allow(unused_imports)]
            use __p::{
                RetDirect as _, RetDisplay as _, ToolParameter as _, ViaArg as _, ViaArgs as _,
                ViaBuiltinHeader as _, ViaHeaderArg as _, ViaInject as _, ViaOptionalHeader as _,
            };
            #(#metas)*
            let mut __schema = __p::ToolSchema::default();
            #(#describes)*
            let __asks_input = __schema.injects();
            let __conflict = __schema.conflict();
            #[allow(unused_mut)]
            let (mut __input, __states) = __schema.finish();
            #raw_schema
            let mut __tool = #krate::Tool::new(#name)
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
        krate,
        &m.func,
        &glue,
        quote!(builder.tool(#fn_name::__presa_tool())),
    );
    let reg = registration(
        krate,
        quote!(#krate::__private::Registered::Tool(#fn_name::__presa_tool())),
    );
    quote! {
        #func
        #item
        const _: () = { #reg };
    }
}

/// The `ArgMeta` of a named parameter, bound to `ident`.
fn meta(ident: &syn::Ident, ty: &syn::Type, p: &NamedParam) -> TokenStream {
    let wire = &p.wire.value;
    let description = opt_str(p.description.as_deref());
    let header = match &p.header {
        // The kind comes from the type's rungs; a type that is no header type fails the
        // last one's bound, at the type.
        Some(h) => quote_spanned! {ty.span()=>
            ::core::option::Option::Some((#h, (&&&__p::Probe::<#ty>::new()).header_kind()))
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
    quote! {
        let #ident = __p::ArgMeta {
            name: #wire,
            description: #description,
            header: #header,
            default: #default,
        };
    }
}

/// `__tool = __tool.task(TaskMode::…)`, through presa's `task!`: without presa's `tasks`
/// feature that macro is the error, so the call is spanned at the `task` key.
fn task(krate: &CratePath, task: Task) -> TokenStream {
    let mode = match task.mode {
        TaskMode::Sync => format_ident!("Sync", span = task.key),
        TaskMode::Optional => format_ident!("Optional", span = task.key),
        TaskMode::Required => format_ident!("Required", span = task.key),
    };
    let krate = krate.at(task.key);
    quote_spanned! {task.key=> #krate::__private::task!(__tool, #mode); }
}

fn annotations(krate: &CratePath, a: &Annotations) -> TokenStream {
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
        a.title
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
        let mut __annotations = #krate::ToolAnnotations::new();
        #(#parts)*
        __tool = __tool.annotations(__annotations);
    }
}

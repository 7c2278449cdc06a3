//! Expansion pieces shared by the attributes. Every path to presa comes from the
//! model's [`CratePath`].

use super::attr::CommonKeys;
use super::crate_path::CratePath;
use super::func::Func;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// `Some("…")` or `None` as tokens.
pub(crate) fn opt_str(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// `item = item.description("…");` when there is a description.
pub(crate) fn set_description(item: &syn::Ident, description: Option<&str>) -> TokenStream {
    match description {
        Some(d) => quote!(#item = #item.description(#d);),
        None => TokenStream::new(),
    }
}

/// The builder calls for the keys every attribute shares that map straight to setters:
/// `title`, `icons`, `meta` (the JSON was checked at compile time), `scopes`.
pub(crate) fn common_setters(item: &syn::Ident, keys: &CommonKeys) -> TokenStream {
    let krate = &keys.krate;
    let title = keys
        .title
        .as_deref()
        .map(|t| quote!(#item = #item.title(#t);));
    let icons = keys.icons.iter().map(|i| {
        let src = &i.value;
        quote! { #item = #item.icon(#krate::Icon::new(#src)); }
    });
    let meta = keys.meta.as_ref().map(|s| {
        let text = &s.value;
        quote! {
            if let ::core::result::Result::Ok(#krate::__private::serde_json::Value::Object(m)) =
                #krate::__private::serde_json::from_str::<#krate::__private::serde_json::Value>(#text)
            {
                #item = #item.meta(m);
            }
        }
    });
    let scopes = (!keys.scopes.is_empty()).then(|| {
        let scopes = keys.scopes.iter().map(|s| &s.value);
        quote! { #item = #item.scopes([#(#scopes),*]); }
    });
    quote! {
        #title
        #(#icons)*
        #meta
        #scopes
    }
}

/// A type named like the function (it lives in the type namespace, the function in the
/// value namespace), carrying the glue and implementing `presa::Item`, so
/// `.add::<name>()` adds the item to a builder.
pub(crate) fn item_type(
    krate: &CratePath,
    func: &Func,
    glue: &TokenStream,
    add: TokenStream,
) -> TokenStream {
    let name = func.name();
    let vis = &func.item.vis;
    let doc = format!(
        "The presa item declared by the function `{name}`; add it with `.add::<{name}>()`."
    );
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}

        const _: () = {
            impl #name {
                #[doc(hidden)]
                #glue
            }
            impl #krate::Item for #name {
                fn add_to(builder: #krate::ServerBuilder) -> #krate::ServerBuilder {
                    #add
                }
            }
        };
    }
}

/// A registration of the item in presa's distributed slice.
pub(crate) fn registration(krate: &CratePath, make: TokenStream) -> TokenStream {
    quote! {
        #[#krate::__private::linkme::distributed_slice(#krate::__private::REGISTRY)]
        #[linkme(crate = #krate::__private::linkme)]
        static __PRESA_REGISTRATION: #krate::__private::Registration =
            #krate::__private::Registration {
                make: || #make,
            };
    }
}

/// The names the expansion binds the function's arguments to, one per parameter.
pub(crate) fn bindings(count: usize) -> Vec<syn::Ident> {
    (0..count).map(|i| format_ident!("__arg_{}", i)).collect()
}

/// Calls the user's function with `bindings`, as a `Result<output, presa::Error>`: an
/// `async fn` is awaited (its future checked for `Send` at the function's span), a plain
/// `fn` runs on the blocking pool, as its request's blocking work (the request's
/// `__parts.ctx`). `__p` is presa's `__private`.
pub(crate) fn call_user_fn(krate: &CratePath, func: &Func, bindings: &[syn::Ident]) -> TokenStream {
    let fn_name = func.name();
    if func.is_async() {
        quote_spanned! {fn_name.span()=>
            ::core::result::Result::<_, #krate::Error>::Ok(
                __p::require_send(#fn_name(#(#bindings),*)).await,
            )
        }
    } else {
        quote! { __p::run_blocking(&__parts.ctx, move || #fn_name(#(#bindings),*)).await }
    }
}

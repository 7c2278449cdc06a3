//! Expansion pieces shared by the attributes.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// `Some("…")` or `None` as tokens.
pub(crate) fn opt_str(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// `var = var.method("…");` when there is a value, nothing otherwise.
pub(crate) fn set_str(var: &str, method: &str, value: Option<&str>) -> TokenStream {
    match value {
        Some(v) => {
            let var = quote::format_ident!("{}", var);
            let method = quote::format_ident!("{}", method);
            quote!(#var = #var.#method(#v);)
        }
        None => TokenStream::new(),
    }
}

/// The builder calls for the keys every attribute shares that map straight to setters:
/// `title`, `icons`, `meta` (the JSON was checked at compile time).
pub(crate) fn common_setters(var: &str, keys: &super::attr::CommonKeys) -> TokenStream {
    let v = quote::format_ident!("{}", var);
    let title = set_str(var, "title", keys.title.as_deref());
    let icons = keys.icons.iter().map(|i| {
        let src = &i.value;
        quote! { #v = #v.icon(::presa::Icon::new(#src)); }
    });
    let meta = keys.meta.as_ref().map(|s| {
        let text = &s.value;
        quote! {
            if let ::core::result::Result::Ok(::presa::__private::serde_json::Value::Object(m)) =
                ::presa::__private::serde_json::from_str::<::presa::__private::serde_json::Value>(#text)
            {
                #v = #v.meta(m);
            }
        }
    });
    quote! {
        #title
        #(#icons)*
        #meta
    }
}

/// A type named like the function (it lives in the type namespace, the function in the
/// value namespace), carrying the glue and implementing `presa::Item`, so
/// `.add::<name>()` adds the item to a builder.
pub(crate) fn item_type(
    name: &syn::Ident,
    vis: &syn::Visibility,
    glue: &TokenStream,
    add: TokenStream,
) -> TokenStream {
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
            impl ::presa::Item for #name {
                fn add_to(builder: ::presa::ServerBuilder) -> ::presa::ServerBuilder {
                    #add
                }
            }
        };
    }
}

/// A registration of the item in presa's distributed slice.
pub(crate) fn registration(make: TokenStream) -> TokenStream {
    quote! {
        #[::presa::__private::linkme::distributed_slice(::presa::__private::REGISTRY)]
        #[linkme(crate = ::presa::__private::linkme)]
        static __PRESA_REGISTRATION: ::presa::__private::Registration =
            ::presa::__private::Registration {
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
/// `fn` runs on the blocking pool.
pub(crate) fn call_user_fn(func: &super::func::Func, bindings: &[syn::Ident]) -> TokenStream {
    let fn_name = func.name();
    if func.is_async() {
        quote_spanned! {fn_name.span()=>
            ::core::result::Result::<_, ::presa::Error>::Ok(
                __p::require_send(#fn_name(#(#bindings),*)).await,
            )
        }
    } else {
        quote! { __p::run_blocking(move || #fn_name(#(#bindings),*)).await }
    }
}

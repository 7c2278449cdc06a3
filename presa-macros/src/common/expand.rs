//! Expansion pieces shared by the attributes.

use proc_macro2::TokenStream;
use quote::quote;

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

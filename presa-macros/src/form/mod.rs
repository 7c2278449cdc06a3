//! `#[derive(ElicitForm)]`: marks a struct as an elicitation form after checking, at
//! compile time, that every field is a flat primitive the 2026-07-28 form subset allows
//! (string, number, integer, boolean, a string enum, or a multi-select list of one); and
//! on a unit-only enum, makes it usable as a form field (a string enum).
//!
//! The field checks are trait bounds placed at each field's type, so a nested struct or
//! a map is refused where it is written, in presa's words.

use crate::common::attr;
use crate::common::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

const KEYS: &[&str] = &["crate"];

pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let item: syn::DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let krate = match crate_path(&item.attrs) {
        Ok(k) => k,
        Err(e) => return e.to_compile_error(),
    };
    if !item.generics.params.is_empty() {
        return syn::Error::new_spanned(&item.generics, "an elicitation form cannot be generic")
            .to_compile_error();
    }
    let name = &item.ident;
    match &item.data {
        syn::Data::Struct(s) => {
            let syn::Fields::Named(fields) = &s.fields else {
                return syn::Error::new_spanned(
                    &item.ident,
                    "an elicitation form is a struct with named fields",
                )
                .to_compile_error();
            };
            let checks = fields.named.iter().map(|f| {
                let ty = &f.ty;
                quote_spanned! {ty.span()=> #krate::__private::form_field::<#ty>(); }
            });
            quote! {
                const _: () = {
                    impl #krate::mrtr::ElicitForm for #name {}
                    #[allow(dead_code)]
                    fn __presa_form_fields() {
                        #(#checks)*
                    }
                };
            }
        }
        syn::Data::Enum(e) => {
            let mut errors: Option<syn::Error> = None;
            for v in &e.variants {
                if !matches!(v.fields, syn::Fields::Unit) {
                    let err = syn::Error::new_spanned(
                        v,
                        "a form enum has unit variants only (it is a string enum on the wire)",
                    );
                    match &mut errors {
                        Some(all) => all.combine(err),
                        None => errors = Some(err),
                    }
                }
            }
            if let Some(e) = errors {
                return e.to_compile_error();
            }
            quote! {
                impl #krate::mrtr::FormEnum for #name {}
            }
        }
        syn::Data::Union(u) => {
            syn::Error::new_spanned(u.union_token, "an elicitation form cannot be a union")
                .to_compile_error()
        }
    }
}

/// `#[presa(crate = "path")]`: where generated code finds presa (default `::presa`).
fn crate_path(attrs: &[syn::Attribute]) -> syn::Result<CratePath> {
    let mut krate = CratePath::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("presa")) {
        a.parse_nested_meta(|meta| match attr::key_of(&meta).as_str() {
            "crate" => {
                krate = CratePath::parse(&attr::lit(&meta)?)?;
                Ok(())
            }
            _ => Err(attr::unknown(&meta, "`#[presa]`", KEYS)),
        })?;
    }
    Ok(krate)
}

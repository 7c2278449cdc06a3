//! Procedural macros for presa: `#[tool]`, `#[prompt]` and `#[resource]`, the
//! `ElicitForm` derive, and (with the `skills` feature) `skills!`.
//!
//! Each attribute lives in its own module, in four stages: `parse` (tokens to a syntax
//! tree with spans), `model` (what the item declares), `validate` (the rules the compiler
//! can check, each error at its token), and `expand` (code from the model only). Every
//! mistake in an attribute is reported at once. On error the user's function is still
//! emitted unchanged, so the only messages are the real ones.
//!
//! Generated code names nothing but `::presa::__private::…` and `::presa` itself, through
//! one value (`common::crate_path::CratePath`) that `crate = "…"` can change, for a
//! crate that renames presa or reaches it through a re-export. Use these attributes
//! through `presa` (`presa::tool` and so on), never directly.

mod common;
mod form;
mod prompt;
mod resource;
#[cfg(feature = "skills")]
mod skills;
mod tool;

use proc_macro::TokenStream;

/// Declares a tool. See `presa::tool` for the reference.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::entry(attr.into(), item.into()).into()
}

/// Declares a prompt. See `presa::prompt` for the reference.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    prompt::entry(attr.into(), item.into()).into()
}

/// Declares a resource or a resource template. See `presa::resource` for the reference.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    resource::entry(attr.into(), item.into()).into()
}

/// Checks at compile time that a struct is a flat elicitation form, or makes a unit-only
/// enum a form field. See `presa::mrtr::ElicitForm`. `#[presa(crate = "…")]` names presa
/// when it is not `::presa`.
#[proc_macro_derive(ElicitForm, attributes(presa))]
pub fn elicit_form(input: TokenStream) -> TokenStream {
    form::derive(input.into()).into()
}

/// Reads a skill set from a folder while the program compiles, checks every rule of the
/// Skills extension, and embeds its files. See `presa::skills!` for the reference.
#[cfg(feature = "skills")]
#[proc_macro]
pub fn skills(input: TokenStream) -> TokenStream {
    skills::entry(input.into()).into()
}

//! Parsing `key = value` and `key(…)` attribute arguments with their spans, and the
//! errors for unknown keys (which list the accepted ones).

use super::Errors;
use super::crate_path::CratePath;
use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{LitStr, Token};

/// A value with the span it was written at.
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// `key = "string"`.
pub(crate) fn string(meta: &ParseNestedMeta) -> syn::Result<Spanned<String>> {
    let lit: LitStr = meta.value()?.parse()?;
    Ok(Spanned {
        value: lit.value(),
        span: lit.span(),
    })
}

/// `key = "string"`, keeping the literal (for spans inside it).
pub(crate) fn lit(meta: &ParseNestedMeta) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

/// `key = <expr>`.
pub(crate) fn expr(meta: &ParseNestedMeta) -> syn::Result<syn::Expr> {
    meta.value()?.parse()
}

/// `key = ["a", "b"]`.
pub(crate) fn strings(meta: &ParseNestedMeta) -> syn::Result<Vec<Spanned<String>>> {
    let array: syn::ExprArray = meta.value()?.parse()?;
    array
        .elems
        .iter()
        .map(|e| match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Ok(Spanned {
                value: s.value(),
                span: s.span(),
            }),
            other => Err(syn::Error::new_spanned(other, "expected a string literal")),
        })
        .collect()
}

/// `key("a", "b")`: a parenthesized list of string literals.
pub(crate) fn string_list(meta: &ParseNestedMeta) -> syn::Result<Vec<Spanned<String>>> {
    let content;
    syn::parenthesized!(content in meta.input);
    let items = content.parse_terminated(|input| input.parse::<LitStr>(), Token![,])?;
    Ok(items
        .into_iter()
        .map(|s| Spanned {
            value: s.value(),
            span: s.span(),
        })
        .collect())
}

/// A bare flag, or `flag = true|false`.
pub(crate) fn flag(meta: &ParseNestedMeta) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        let b: syn::LitBool = meta.value()?.parse()?;
        Ok(b.value)
    } else {
        Ok(true)
    }
}

/// Skips whatever value follows a key, so parsing can go on after an error.
pub(crate) fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    let input = meta.input;
    if input.peek(Token![=]) {
        let _: Token![=] = input.parse()?;
    }
    if input.is_empty() || input.peek(Token![,]) {
        return Ok(());
    }
    if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        let _: TokenStream = content.parse()?;
    } else {
        let _: syn::Expr = input.parse()?;
    }
    Ok(())
}

/// The error for an unknown key, listing the accepted ones.
pub(crate) fn unknown(meta: &ParseNestedMeta, what: &str, accepted: &[&str]) -> syn::Error {
    let key = meta
        .path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| "this key".to_owned());
    let list = accepted
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    meta.error(format!(
        "unknown {what} key `{key}`\nhelp: expected one of {list}"
    ))
}

/// Parses attribute arguments with `each`, collecting every error instead of stopping at
/// the first: a key whose value is wrong is reported and skipped.
pub(crate) fn parse_args(
    tokens: TokenStream,
    errors: &mut Errors,
    mut each: impl FnMut(&ParseNestedMeta, &mut Errors) -> syn::Result<()>,
) {
    let parser = syn::meta::parser(|meta| {
        if let Err(e) = each(&meta, errors) {
            errors.push(e);
            // Resynchronise: skip what is left of this key's value.
            skip_value(&meta)?;
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(tokens) {
        errors.push(e);
    }
}

/// Parses nested `key(…)` arguments the same way.
pub(crate) fn parse_nested(
    meta: &ParseNestedMeta,
    errors: &mut Errors,
    mut each: impl FnMut(&ParseNestedMeta, &mut Errors) -> syn::Result<()>,
) -> syn::Result<()> {
    meta.parse_nested_meta(|inner| {
        if let Err(e) = each(&inner, errors) {
            errors.push(e);
            skip_value(&inner)?;
        }
        Ok(())
    })
}

/// The keys every attribute shares: `name`, `title`, `description`, `icons`, `meta`,
/// `scopes` and `crate`.
#[derive(Default)]
pub(crate) struct CommonKeys {
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) icons: Vec<Spanned<String>>,
    pub(crate) meta: Option<Spanned<String>>,
    /// `scopes("a", …)`: the OAuth scopes a call needs.
    pub(crate) scopes: Vec<Spanned<String>>,
    /// `crate = "path"`: where generated code finds presa (default `::presa`).
    pub(crate) krate: CratePath,
}

impl CommonKeys {
    /// The `name` key, or the function's name at its span.
    pub(crate) fn name_or_fn(&self, func: &super::func::Func) -> Spanned<String> {
        self.name.clone().unwrap_or_else(|| Spanned {
            value: func.name().to_string(),
            span: func.name().span(),
        })
    }

    /// The `description` key, or the function's doc comment.
    pub(crate) fn description_or_doc(&self, func: &super::func::Func) -> Option<String> {
        self.description
            .clone()
            .or_else(|| super::doc_text(&func.item.attrs))
    }

    /// Parses `key` when it is one of the shared keys; `Ok(false)` when it is not.
    pub(crate) fn parse(&mut self, key: &str, meta: &ParseNestedMeta) -> syn::Result<bool> {
        match key {
            "name" => self.name = Some(string(meta)?),
            "title" => self.title = Some(string(meta)?.value),
            "description" => self.description = Some(string(meta)?.value),
            "icons" => self.icons = strings(meta)?,
            "meta" => self.meta = Some(string(meta)?),
            "scopes" => self.scopes = string_list(meta)?,
            "crate" => self.krate = CratePath::parse(&lit(meta)?)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Parses `complete(name = provider, …)`; `what` names the left-hand side in errors.
pub(crate) fn completions(
    meta: &ParseNestedMeta,
    errors: &mut Errors,
    what: &str,
    out: &mut Vec<(syn::Ident, syn::Expr)>,
) -> syn::Result<()> {
    parse_nested(meta, errors, |inner, _| {
        let Some(ident) = inner.path.get_ident().cloned() else {
            return Err(inner.error(format!("expected `{what} = provider`")));
        };
        if !inner.input.peek(syn::Token![=]) {
            return Err(inner.error(format!("expected `{what} = provider`")));
        }
        out.push((ident, expr(inner)?));
        Ok(())
    })
}

/// The name of a key, or `""` for a path that is not a single identifier.
pub(crate) fn key_of(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// The span of the bytes `range` of a string literal's value, where the compiler can give
/// one: only a plain `"…"` literal without escapes maps value bytes to source bytes one to
/// one. Stable Rust gives no span inside a literal (`Literal::subspan` is `None`), so
/// there the literal's own span: messages name the piece in words either way.
pub(crate) fn span_within(lit: &LitStr, range: std::ops::Range<usize>) -> Span {
    let token = lit.token();
    let source = token.to_string();
    let plain =
        source.len() == lit.value().len() + 2 && source.starts_with('"') && !source.contains('\\');
    plain
        .then(|| token.subspan(range.start + 1..range.end + 1))
        .flatten()
        .unwrap_or_else(|| lit.span())
}

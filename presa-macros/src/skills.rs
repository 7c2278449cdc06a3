//! `skills!("folder")`: a skill set (the Skills extension, SEP-2640) read and checked when
//! the program is compiled, and embedded in it.
//!
//! The folder is read with `presa_rules::skill::read_folder` and checked with
//! `presa_rules::skill::check_set`, the functions `Skills::from_folder` uses at run time,
//! so a set the macro accepts is one the runtime accepts and a compile error names the
//! same file and rule as a build error would. No rule is stated here. Each file is
//! embedded with `include_bytes!` at its absolute path, which makes cargo rebuild the
//! crate when one of them changes or disappears; a file added to the folder is not seen
//! until the crate is compiled again for another reason (a build script that says
//! `cargo::rerun-if-changed=<folder>` covers that; the book says how).

use crate::common::crate_path::CratePath;
use presa_rules::skill::{self, SkillError, SourceFile};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::path::{Path, PathBuf};
use syn::parse::{ParseStream, Parser};
use syn::{LitStr, Token};

/// The macro's arguments: the folder's path and, optionally, `crate = "…"`.
struct Args {
    folder: LitStr,
    krate: CratePath,
}

pub(crate) fn entry(input: TokenStream) -> TokenStream {
    match Parser::parse2(parse, input).and_then(|args| expand(&args)) {
        Ok(tokens) => tokens,
        Err(e) => e.to_compile_error(),
    }
}

const USAGE: &str = "help: name the folder with a string literal, relative to the folder of the crate's Cargo.toml: `presa::skills!(\"skills\")`";

fn parse(input: ParseStream) -> syn::Result<Args> {
    if input.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            format!("expected the skill set's folder\n{USAGE}"),
        ));
    }
    if !input.peek(LitStr) {
        return Err(input.error(format!(
            "expected a string literal: the skill set's folder (the macro reads it while the program compiles, so it cannot be a constant or another macro)\n{USAGE}"
        )));
    }
    let folder: LitStr = input.parse()?;
    let mut krate = CratePath::default();
    while !input.is_empty() {
        input.parse::<Token![,]>()?;
        if input.is_empty() {
            break;
        }
        if input.peek(Token![crate]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            krate = CratePath::parse(&input.parse::<LitStr>()?)?;
        } else {
            return Err(input.error(
                "unknown argument; after the folder, the only one is `crate = \"…\"` (the path presa is reached by)",
            ));
        }
    }
    Ok(Args { folder, krate })
}

fn expand(args: &Args) -> syn::Result<TokenStream> {
    let span = args.folder.span();
    let written = args.folder.value();
    if written.is_empty() {
        return Err(syn::Error::new(
            span,
            format!("the folder is empty\n{USAGE}"),
        ));
    }
    let base = std::env::var_os("CARGO_MANIFEST_DIR").ok_or_else(|| {
        syn::Error::new(
            span,
            "CARGO_MANIFEST_DIR is not set: the folder is found from it, so build with cargo",
        )
    })?;
    let root: PathBuf = Path::new(&base).join(&written);
    let Some(root_text) = root.to_str() else {
        return Err(syn::Error::new(
            span,
            "the folder's full path is not UTF-8, so its files cannot be embedded with include_bytes!",
        ));
    };
    match std::fs::metadata(&root) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(syn::Error::new(
                span,
                format!("`{written}` is not a folder\n{USAGE}"),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(syn::Error::new(
                span,
                format!("no folder at `{written}`\n{USAGE}"),
            ));
        }
        Err(e) => {
            return Err(syn::Error::new(
                span,
                format!("the folder `{written}` cannot be read: {e}"),
            ));
        }
    }
    let refused = |e: SkillError| syn::Error::new(span, message(&written, &e));
    let files = skill::read_folder(&root).map_err(refused)?;
    let sources: Vec<SourceFile<'_>> = files
        .iter()
        .map(|(path, bytes)| SourceFile { path, bytes })
        .collect();
    skill::check_set(&sources).map_err(refused)?;

    let krate = &args.krate;
    let entries = files.iter().map(|(path, _)| {
        // `path` is `/`-separated and checked to hold only plain segments, so joined to
        // the folder it names the file read above.
        let full = format!("{}/{path}", root_text.trim_end_matches(['/', '\\']));
        quote! {
            #krate::skills::EmbeddedFile {
                path: #path,
                bytes: ::core::include_bytes!(#full),
            }
        }
    });
    Ok(quote! {
        {
            const FILES: &[#krate::skills::EmbeddedFile] = &[#(#entries),*];
            #krate::skills::Skills::from_embedded(FILES)
        }
    })
}

/// The compile error for a set that breaks a rule: the file (as written from the crate's
/// folder), what about it breaks the rule, and the rule.
fn message(written: &str, e: &SkillError) -> String {
    let folder = written.trim_end_matches('/');
    let file = if e.file == "." || e.file.is_empty() {
        folder.to_owned()
    } else {
        format!("{folder}/{}", e.file)
    };
    format!("{file}: {}\nrule: {}", e.detail, e.rule.statement())
}

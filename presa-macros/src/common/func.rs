//! The annotated function: checks every attribute shares (a free function, not generic,
//! no receiver), and its parameters with their `#[arg(…)]` and `#[header(…)]` attributes.

use super::Errors;
use proc_macro2::TokenStream;

/// One parameter.
pub(crate) struct Param {
    /// The name, when the pattern is a plain identifier.
    pub(crate) ident: Option<syn::Ident>,
    /// The type.
    pub(crate) ty: syn::Type,
    /// The `#[arg(…)]` attribute's arguments and the whole attribute (where its errors
    /// point), if any.
    pub(crate) arg: Option<(TokenStream, syn::Attribute)>,
    /// The `#[header("…")]` attribute's name and span, if any.
    pub(crate) header: Option<syn::LitStr>,
}

impl Param {
    /// The argument's name on the wire: `rename` when given, else the parameter's name
    /// (without `r#`), at its span; `None` for a pattern parameter without a rename.
    pub(crate) fn wire(
        &self,
        rename: Option<super::attr::Spanned<String>>,
    ) -> Option<super::attr::Spanned<String>> {
        rename.or_else(|| {
            self.ident.as_ref().map(|i| super::attr::Spanned {
                value: wire_name(i),
                span: i.span(),
            })
        })
    }
}

/// The function an attribute is on.
pub(crate) struct Func {
    /// The function, with `#[arg]` and `#[header]` removed from its parameters.
    pub(crate) item: syn::ItemFn,
    pub(crate) params: Vec<Param>,
}

impl Func {
    pub(crate) fn name(&self) -> &syn::Ident {
        &self.item.sig.ident
    }

    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }

    /// The declared return type (`()` when there is none).
    pub(crate) fn output(&self) -> syn::Type {
        match &self.item.sig.output {
            syn::ReturnType::Default => syn::parse_quote!(()),
            syn::ReturnType::Type(_, ty) => (**ty).clone(),
        }
    }
}

/// Parses the item an attribute is on; `what` is `#[tool]`, `#[prompt]` or `#[resource]`.
pub(crate) fn parse(item: TokenStream, what: &str, errors: &mut Errors) -> Option<Func> {
    let mut f: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            errors.push(syn::Error::new_spanned(
                item,
                format!("{what} can only be used on a function"),
            ));
            return None;
        }
    };
    let sig = &f.sig;
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            format!("{what} functions cannot be generic\nhelp: presa needs one concrete signature to build the schema and the handler; write a non-generic wrapper"),
        );
    }
    if let Some(c) = &sig.constness {
        errors.at(c, format!("{what} functions cannot be `const`"));
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, format!("{what} functions cannot be variadic"));
    }
    if let Some(abi) = &sig.abi {
        errors.at(abi, format!("{what} functions cannot have an `extern` ABI"));
    }
    // `impl Trait` is generic too, though not among the declared parameters.
    let inputs = sig.inputs.iter().filter_map(|input| match input {
        syn::FnArg::Typed(t) => Some(&*t.ty),
        syn::FnArg::Receiver(_) => None,
    });
    let output = match &sig.output {
        syn::ReturnType::Type(_, ty) => Some(&**ty),
        syn::ReturnType::Default => None,
    };
    for ty in inputs.chain(output) {
        if let Some(found) = impl_trait(ty) {
            errors.at(
                found,
                format!("{what} functions cannot take or return `impl Trait`\nhelp: presa needs one concrete signature to build the schema and the handler; name the type"),
            );
        }
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.at(
                r,
                format!("{what} cannot be used on a method with `self`\nhelp: write a free function, and share state with a `State<T>` parameter"),
            ),
            syn::FnArg::Typed(pt) => {
                let mut arg = None;
                let mut header = None;
                for a in &pt.attrs {
                    if a.path().is_ident("arg") {
                        match &a.meta {
                            syn::Meta::List(l) => arg = Some((l.tokens.clone(), a.clone())),
                            _ => errors.at(a, "expected `#[arg(key = value, …)]`"),
                        }
                    } else if a.path().is_ident("header") {
                        match a.parse_args::<syn::LitStr>() {
                            Ok(name) => {
                                if header.is_some() {
                                    errors.at(a, "duplicate `#[header]` on one parameter");
                                }
                                header = Some(name);
                            }
                            Err(_) => errors.at(a, "expected `#[header(\"Name\")]`"),
                        }
                    }
                }
                let ident = match &*pt.pat {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(pi.ident.clone()),
                    _ => None,
                };
                params.push(Param {
                    ident,
                    ty: (*pt.ty).clone(),
                    arg,
                    header,
                });
            }
        }
    }
    strip_param_attrs(&mut f);
    Some(Func { item: f, params })
}

/// Removes presa's parameter attributes (`#[arg]`, `#[header]`), which are not real
/// attributes, from a function.
pub(crate) fn strip_param_attrs(f: &mut syn::ItemFn) {
    for input in &mut f.sig.inputs {
        if let syn::FnArg::Typed(pt) = input {
            pt.attrs
                .retain(|a| !a.path().is_ident("arg") && !a.path().is_ident("header"));
        }
    }
}

/// The first `impl Trait` in `ty`, if any, looking through references, groups, tuples,
/// arrays, slices, pointers and generic arguments.
fn impl_trait(ty: &syn::Type) -> Option<&syn::TypeImplTrait> {
    match ty {
        syn::Type::ImplTrait(t) => Some(t),
        syn::Type::Reference(r) => impl_trait(&r.elem),
        syn::Type::Paren(p) => impl_trait(&p.elem),
        syn::Type::Group(g) => impl_trait(&g.elem),
        syn::Type::Array(a) => impl_trait(&a.elem),
        syn::Type::Slice(s) => impl_trait(&s.elem),
        syn::Type::Ptr(p) => impl_trait(&p.elem),
        syn::Type::Tuple(t) => t.elems.iter().find_map(impl_trait),
        syn::Type::Path(p) => p.path.segments.iter().find_map(|seg| match &seg.arguments {
            syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => impl_trait(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// The name of a parameter on the wire: its identifier without a leading `r#`.
pub(crate) fn wire_name(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    let s = s.strip_prefix("r#").unwrap_or(&s);
    s.to_owned()
}

//! JSON Schema handling for tool input and output schemas: structural bounds, the refusal
//! of any `$ref` that is not same-document (nothing is ever fetched), compilation (by
//! presa's own 2020-12 validator, or by the `jsonschema` crate for what it leaves out when
//! the `jsonschema` feature is on), and the `x-mcp-header` table of a tool's input schema.

pub mod uri_template;

use presa_jsonschema::{CompileError, Validator};
use serde_json::{Map, Value};

/// Deepest nesting of a schema presa accepts.
pub const MAX_SCHEMA_DEPTH: usize = 32;
/// Most subschemas (objects) one schema may contain.
pub const MAX_SCHEMA_NODES: usize = 4096;
/// The largest integer an `x-mcp-header` integer may carry: 2^53 - 1.
pub const MAX_HEADER_INTEGER: i64 = 9_007_199_254_740_991;

/// A compiled schema.
pub(crate) enum CompiledSchema {
    /// Checked by presa's own validator (the `presa-jsonschema` crate).
    Own(Validator),
    /// A schema using what presa's validator leaves out, compiled by the `jsonschema`
    /// crate (the `jsonschema` feature).
    #[cfg(feature = "jsonschema")]
    Full(Box<jsonschema::Validator>),
}

impl CompiledSchema {
    /// Checks bounds and references, then compiles.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        let mut nodes = 0;
        walk(schema, 0, &mut nodes)?;
        match Validator::compile(schema) {
            Ok(own) => Ok(CompiledSchema::Own(own)),
            Err(CompileError::Invalid(why)) => Err(format!("schema does not compile: {why}")),
            #[cfg(feature = "jsonschema")]
            Err(CompileError::Unsupported(_)) => jsonschema::options()
                .should_validate_formats(false)
                .build(schema)
                .map(|v| CompiledSchema::Full(Box::new(v)))
                .map_err(|e| format!("schema does not compile: {e}")),
            #[cfg(not(feature = "jsonschema"))]
            Err(CompileError::Unsupported(why)) => Err(format!(
                "schema uses {why}, which presa's built-in validator leaves out; enable presa's \
                 `jsonschema` feature to validate it with the jsonschema crate"
            )),
        }
    }

    /// Validates `value`; on failure, a short description of the first few problems.
    pub(crate) fn validate(&self, value: &Value) -> Result<(), String> {
        match self {
            CompiledSchema::Own(own) => own.validate(value),
            #[cfg(feature = "jsonschema")]
            CompiledSchema::Full(v) => {
                if v.is_valid(value) {
                    return Ok(());
                }
                let text: Vec<String> = v
                    .iter_errors(value)
                    .take(5)
                    .map(|e| {
                        let path = e.instance_path().to_string();
                        if path.is_empty() {
                            e.to_string()
                        } else {
                            format!("{path}: {e}")
                        }
                    })
                    .collect();
                if text.is_empty() {
                    return Ok(());
                }
                Err(text.join("; "))
            }
        }
    }
}

fn walk(value: &Value, depth: usize, nodes: &mut usize) -> Result<(), String> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    match value {
        Value::Object(map) => {
            *nodes += 1;
            if *nodes > MAX_SCHEMA_NODES {
                return Err(format!(
                    "schema has more than {MAX_SCHEMA_NODES} subschemas"
                ));
            }
            for key in ["$ref", "$dynamicRef"] {
                if let Some(r) = map.get(key).and_then(Value::as_str)
                    && !r.starts_with('#')
                {
                    return Err(format!(
                        "{key} {r:?} is not a same-document reference; presa never fetches schemas"
                    ));
                }
            }
            for v in map.values() {
                walk(v, depth + 1, nodes)?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|v| walk(v, depth + 1, nodes)),
        _ => Ok(()),
    }
}

/// The JSON type an `x-mcp-header` parameter maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderType {
    String,
    Integer,
    Boolean,
}

/// One `x-mcp-header` annotation of a tool's input schema.
#[derive(Clone, Debug)]
pub(crate) struct HeaderParam {
    /// The property's path from the arguments object: the chain of `properties` names
    /// leading to it (one name for a top-level argument).
    pub(crate) path: Vec<String>,
    /// The header name after `Mcp-Param-`.
    pub(crate) header: String,
    /// The lower-cased full header name, `mcp-param-<name>`.
    pub(crate) header_lower: String,
    /// The same, as a header name for lookups.
    pub(crate) header_name: axum::http::HeaderName,
    pub(crate) ty: HeaderType,
}

/// Whether `name` is an RFC 9110 token (the rule `#[header]` checks at compile time).
pub(crate) fn is_token(name: &str) -> bool {
    presa_rules::header::is_token(name)
}

/// Reads and checks the `x-mcp-header` annotations of an input schema. An annotation is
/// valid only on a property reached from the root through `properties` alone (nested
/// objects included); one anywhere else (under `items`, a composition or conditional
/// keyword, `$defs`, or on the root itself) makes the tool invalid (`server/tools.mdx`,
/// `x-mcp-header`), as does a value that breaks the rules on names and types.
pub(crate) fn header_params(input_schema: &Map<String, Value>) -> Result<Vec<HeaderParam>, String> {
    let mut out: Vec<HeaderParam> = Vec::new();
    let mut path = Vec::new();
    walk_headers_at(input_schema, true, &mut path, &mut out, 0)?;
    Ok(out)
}

/// Keywords whose value is one subschema, an array of them, or a map of them: where an
/// annotation could hide. Everything else (`default`, `const`, `enum`, `examples`, …) is
/// data, not schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const SCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const SCHEMA_MAPS: &[&str] = &[
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// How deep the walk goes: the schema compiler bounds nesting at 32 levels, and a schema
/// built in code could be deeper than the stack allows before it is compiled.
const HEADER_WALK_DEPTH: usize = 64;

/// Walks one schema object. `reachable`: whether it is the root or a property reached
/// from it through `properties` alone; `path` names that property.
fn walk_headers_at(
    schema: &Map<String, Value>,
    reachable: bool,
    path: &mut Vec<String>,
    out: &mut Vec<HeaderParam>,
    depth: usize,
) -> Result<(), String> {
    if depth > HEADER_WALK_DEPTH {
        return Err(format!(
            "the schema nests deeper than {HEADER_WALK_DEPTH} levels"
        ));
    }
    if let Some(annotation) = schema.get("x-mcp-header") {
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header {annotation} is not on a property reached from the root through `properties` alone{}",
                if path.is_empty() {
                    String::new()
                } else {
                    format!(" (under {:?})", path.join("."))
                }
            ));
        }
        out.push(header_param(annotation, schema, path, out)?);
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, sub) in props {
            if let Value::Object(sub) = sub {
                path.push(name.clone());
                walk_headers_at(sub, reachable, path, out, depth + 1)?;
                path.pop();
            }
        }
    }
    // Below any other keyword, nothing is statically reachable.
    let mut beneath = |sub: &Value| match sub {
        Value::Object(sub) => walk_headers_at(sub, false, path, out, depth + 1),
        _ => Ok(()),
    };
    for key in ONE_SCHEMA {
        if let Some(sub) = schema.get(*key) {
            beneath(sub)?;
        }
    }
    for key in SCHEMA_ARRAYS {
        if let Some(Value::Array(subs)) = schema.get(*key) {
            subs.iter().try_for_each(&mut beneath)?;
        }
    }
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(subs)) = schema.get(*key) {
            subs.values().try_for_each(&mut beneath)?;
        }
    }
    Ok(())
}

/// One annotation on the property at `path`, checked against those read before it.
fn header_param(
    annotation: &Value,
    schema: &Map<String, Value>,
    path: &[String],
    seen: &[HeaderParam],
) -> Result<HeaderParam, String> {
    let property = path.join(".");
    let Some(header) = annotation.as_str() else {
        return Err(format!("x-mcp-header on {property:?} must be a string"));
    };
    if !is_token(header) {
        return Err(format!(
            "x-mcp-header {header:?} on {property:?} is not a valid HTTP header token"
        ));
    }
    let ty = match schema.get("type").and_then(Value::as_str) {
        Some("string") => HeaderType::String,
        Some("integer") => HeaderType::Integer,
        Some("boolean") => HeaderType::Boolean,
        _ => {
            return Err(format!(
                "x-mcp-header {header:?} on {property:?} needs a property of type string, integer or boolean"
            ));
        }
    };
    let header_lower = format!("mcp-param-{}", header.to_ascii_lowercase());
    if seen.iter().any(|h| h.header_lower == header_lower) {
        return Err(format!(
            "x-mcp-header {header:?} is used twice (names are compared ignoring case)"
        ));
    }
    // A token is always a valid header name.
    let header_name = axum::http::HeaderName::try_from(header_lower.as_str())
        .map_err(|e| format!("x-mcp-header {header:?}: {e}"))?;
    Ok(HeaderParam {
        path: path.to_vec(),
        header: header.to_owned(),
        header_name,
        header_lower,
        ty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema presa's validator leaves out: refused at build without the `jsonschema`
    /// feature (naming the keyword and the feature), validated by the crate with it.
    #[test]
    fn what_the_own_validator_leaves_out() {
        let schema =
            json!({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false});
        let compiled = CompiledSchema::compile(&schema);
        #[cfg(not(feature = "jsonschema"))]
        {
            let Err(why) = compiled else {
                panic!("compiled without the feature");
            };
            assert!(why.contains("unevaluatedProperties"), "{why}");
            assert!(why.contains("`jsonschema` feature"), "{why}");
        }
        #[cfg(feature = "jsonschema")]
        {
            let compiled = compiled.expect("the jsonschema crate compiles it");
            assert!(matches!(compiled, CompiledSchema::Full(_)));
            assert_eq!(compiled.validate(&json!({"a": 1})), Ok(()));
            let why = compiled
                .validate(&json!({"a": 1, "b": 2}))
                .expect_err("b is unevaluated");
            assert!(why.contains("b"), "{why}");
        }
        // Within the validator's reach: presa's own, with or without the feature.
        let own =
            CompiledSchema::compile(&json!({"anyOf": [{"type": "string"}]})).expect("compiles");
        assert!(matches!(own, CompiledSchema::Own(_)));
    }
    use serde_json::json;

    #[test]
    fn network_refs_are_refused() {
        let s = json!({"type":"object","properties":{"a":{"$ref":"http://example.com/s.json"}}});
        assert!(CompiledSchema::compile(&s).is_err());
        let s = json!({"type":"object","$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}});
        assert!(CompiledSchema::compile(&s).is_ok());
    }

    #[test]
    fn depth_is_bounded() {
        let mut s = json!({"type":"string"});
        for _ in 0..40 {
            s = json!({"allOf":[s]});
        }
        assert!(CompiledSchema::compile(&s).is_err());
    }

    #[test]
    fn header_annotations_are_checked() {
        let ok = json!({"properties":{"r":{"type":"string","x-mcp-header":"Region"}}});
        assert_eq!(header_params(ok.as_object().unwrap()).unwrap().len(), 1);
        for bad in [
            json!({"properties":{"r":{"type":"number","x-mcp-header":"R"}}}),
            json!({"properties":{"r":{"type":"string","x-mcp-header":"a b"}}}),
            json!({"properties":{"r":{"type":"string","x-mcp-header":""}}}),
            json!({"properties":{"a":{"type":"string","x-mcp-header":"R"},"b":{"type":"string","x-mcp-header":"r"}}}),
        ] {
            assert!(header_params(bad.as_object().unwrap()).is_err(), "{bad}");
        }
    }

    /// Nested properties reached through `properties` alone may carry an annotation,
    /// read at their path; anywhere else an annotation makes the schema invalid.
    #[test]
    fn header_annotations_follow_properties_chains_only() {
        let nested = json!({"type": "object", "properties": {
            "target": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}},
            "n": {"type": "integer", "x-mcp-header": "N"}}});
        let found = header_params(nested.as_object().unwrap()).expect("valid");
        let mut paths: Vec<_> = found.iter().map(|h| h.path.join("/")).collect();
        paths.sort();
        assert_eq!(paths, ["n", "target/region"]);
        let region = json!({"type": "string", "x-mcp-header": "Region"});
        for bad in [
            json!({"type": "object", "x-mcp-header": "Root"}),
            json!({"properties": {"l": {"type": "array", "items": region}}}),
            json!({"properties": {"l": {"type": "array", "prefixItems": [region]}}}),
            json!({"properties": {"u": {"anyOf": [region, {"type": "null"}]}}}),
            json!({"allOf": [{"properties": {"r": region}}]}),
            json!({"properties": {"o": {"type": "object", "additionalProperties": region}}}),
            json!({"$defs": {"r": region}, "properties": {"r": {"$ref": "#/$defs/r"}}}),
            json!({"if": {"properties": {"r": region}}, "then": {}}),
            json!({"properties": {"o": {"patternProperties": {"^r": region}}}}),
            json!({"properties": {"r": {"not": region}}}),
            json!({"properties": {"s": {"type": "string",
                "contentSchema": {"properties": {"r": region}}}}}),
        ] {
            let why = header_params(bad.as_object().unwrap()).expect_err(&bad.to_string());
            assert!(why.contains("through `properties` alone"), "{why}");
        }
        // The walk stops past its depth bound instead of recursing without end.
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "object", "properties": {"p": deep}});
        }
        let why = header_params(deep.as_object().unwrap()).expect_err("too deep");
        assert!(why.contains("deeper than"), "{why}");
        // An `x-mcp-header` key inside data (a default) is not an annotation.
        let data = json!({"properties": {"o": {"type": "object",
            "default": {"x-mcp-header": "NotOne"}}}});
        assert!(
            header_params(data.as_object().unwrap())
                .expect("valid")
                .is_empty()
        );
    }
}

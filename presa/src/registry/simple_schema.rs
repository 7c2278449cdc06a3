//! A direct validator for the common, simple shape of tool schemas: the flat and nested
//! objects of named, typed fields that `#[tool]` generates (and most hand-written
//! schemas are). It answers only "valid or not"; the `jsonschema` crate remains the
//! validator of record for everything else and for the wording of every error.
//!
//! Why it exists: building any `jsonschema` validator first builds the validator of the
//! 2020-12 meta-schema, which was 82 % of a presa server's start-up (4.4 M of 5.3 M
//! instructions to the first answer, by callgrind) and pulls most of `jsonschema`'s code
//! into memory. A schema this module recognises needs none of that until an argument is
//! actually invalid.
//!
//! The subset is a whitelist. A schema is recognised only if every keyword in it is one
//! of those below with a well-formed value (so it is also valid against the meta-schema);
//! any other keyword (`pattern`, `anyOf`, `if`, `$id`, `uniqueItems`, ...), any other
//! `$schema`, a `$ref` that is not `#/$defs/<name>`, or a `$defs` below the root sends
//! the whole schema to `jsonschema`. Recognised keywords: `type`, `properties`,
//! `required`, `additionalProperties` (a boolean), `items` (a schema), `enum`, `const`,
//! `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`,
//! `maxLength`, `minItems`, `maxItems`, `$ref`, `$defs` (root), `$schema` (root, 2020-12
//! only); the annotations `title`, `description`, `default`, `examples`, `format`
//! (an annotation, as presa compiles with format assertions off), `deprecated`,
//! `readOnly`, `writeOnly`, `$comment`; and extension keys starting with `x-`.
//! `tests` below checks it against `jsonschema` on every schema and instance pair.

use serde_json::{Map, Number, Value};
use std::collections::HashMap;

/// The 2020-12 dialect, the only `$schema` recognised.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A recognised schema: its root node and its `$defs`.
#[derive(Debug)]
pub(crate) struct SimpleSchema {
    root: Node,
    defs: HashMap<String, Node>,
}

/// JSON types, as a bit set.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const OBJECT: u8 = 4;
const ARRAY: u8 = 8;
const NUMBER: u8 = 16;
const STRING: u8 = 32;
const INTEGER: u8 = 64;

#[derive(Debug, Default)]
struct Node {
    /// Allowed types (`None`: any).
    types: Option<u8>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    /// `additionalProperties: false`.
    closed: bool,
    items: Option<Box<Node>>,
    one_of_values: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    /// `#/$defs/<name>`.
    reference: Option<String>,
}

impl SimpleSchema {
    /// Recognises `schema`, or `None` when it is outside the subset.
    pub(crate) fn recognise(schema: &Value) -> Option<SimpleSchema> {
        let Value::Object(root) = schema else {
            return None;
        };
        let mut defs = HashMap::new();
        if let Some(d) = root.get("$defs") {
            for (name, def) in d.as_object()? {
                let Value::Object(def) = def else {
                    return None;
                };
                defs.insert(name.clone(), node(def, false)?);
            }
        }
        if let Some(dialect) = root.get("$schema")
            && dialect.as_str() != Some(DRAFT_2020_12)
        {
            return None;
        }
        let simple = SimpleSchema {
            root: node(root, true)?,
            defs,
        };
        // Every reference resolves, and no definition is only a reference (a chain
        // of them could loop without reading the instance).
        let mut ok = true;
        simple.each_reference(&simple.root, &mut |r| {
            ok &= simple.defs.contains_key(r);
        });
        for def in simple.defs.values() {
            ok &= def.reference.is_none();
            simple.each_reference(def, &mut |r| ok &= simple.defs.contains_key(r));
        }
        ok.then_some(simple)
    }

    fn each_reference(&self, node: &Node, f: &mut dyn FnMut(&str)) {
        if let Some(r) = &node.reference {
            f(r);
        }
        for (_, p) in &node.properties {
            self.each_reference(p, f);
        }
        if let Some(items) = &node.items {
            self.each_reference(items, f);
        }
    }

    /// Whether `instance` is valid.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.valid(&self.root, instance)
    }

    fn valid(&self, node: &Node, v: &Value) -> bool {
        if let Some(r) = &node.reference {
            match self.defs.get(r) {
                Some(target) if self.valid(target, v) => {}
                _ => return false,
            }
        }
        if let Some(types) = node.types
            && types & type_of(v) == 0
        {
            return false;
        }
        if let Some(values) = &node.one_of_values
            && !values.iter().any(|e| equal(e, v))
        {
            return false;
        }
        if let Some(c) = &node.constant
            && !equal(c, v)
        {
            return false;
        }
        match v {
            Value::Object(map) => {
                if !node.required.iter().all(|k| map.contains_key(k)) {
                    return false;
                }
                for (k, sub) in &node.properties {
                    if let Some(x) = map.get(k)
                        && !self.valid(sub, x)
                    {
                        return false;
                    }
                }
                if node.closed
                    && !map
                        .keys()
                        .all(|k| node.properties.iter().any(|(p, _)| p == k))
                {
                    return false;
                }
                true
            }
            Value::Array(items) => {
                let n = items.len() as u64;
                node.min_items.is_none_or(|m| n >= m)
                    && node.max_items.is_none_or(|m| n <= m)
                    && node
                        .items
                        .as_ref()
                        .is_none_or(|sub| items.iter().all(|x| self.valid(sub, x)))
            }
            Value::String(s) => {
                let (min, max) = (node.min_length, node.max_length);
                if min.is_none() && max.is_none() {
                    return true;
                }
                let n = s.chars().count() as u64;
                min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m)
            }
            Value::Number(n) => {
                use std::cmp::Ordering::{Greater, Less};
                let cmp = |limit: &Option<Number>, fail: &[std::cmp::Ordering]| {
                    limit
                        .as_ref()
                        .is_none_or(|l| compare(n, l).is_some_and(|o| !fail.contains(&o)))
                };
                cmp(&node.minimum, &[Less])
                    && cmp(&node.maximum, &[Greater])
                    && cmp(&node.exclusive_minimum, &[Less, std::cmp::Ordering::Equal])
                    && cmp(
                        &node.exclusive_maximum,
                        &[Greater, std::cmp::Ordering::Equal],
                    )
            }
            Value::Null | Value::Bool(_) => true,
        }
    }
}

/// Reads one schema object into a node, or `None` if anything in it is outside the
/// subset.
fn node(map: &Map<String, Value>, root: bool) -> Option<Node> {
    let mut n = Node::default();
    for (key, value) in map {
        match key.as_str() {
            "type" => n.types = Some(types(value)?),
            "properties" => {
                for (name, sub) in value.as_object()? {
                    let Value::Object(sub) = sub else {
                        return None;
                    };
                    n.properties.push((name.clone(), node(sub, false)?));
                }
            }
            "required" => {
                let names = value.as_array()?;
                for name in names {
                    let name = name.as_str()?;
                    if n.required.iter().any(|r| r == name) {
                        return None;
                    }
                    n.required.push(name.to_owned());
                }
            }
            "additionalProperties" => n.closed = !value.as_bool()?,
            "items" => {
                let Value::Object(sub) = value else {
                    return None;
                };
                n.items = Some(Box::new(node(sub, false)?));
            }
            "enum" => n.one_of_values = Some(value.as_array()?.clone()),
            "const" => n.constant = Some(value.clone()),
            "minimum" => n.minimum = Some(number(value)?),
            "maximum" => n.maximum = Some(number(value)?),
            "exclusiveMinimum" => n.exclusive_minimum = Some(number(value)?),
            "exclusiveMaximum" => n.exclusive_maximum = Some(number(value)?),
            "minLength" => n.min_length = Some(count(value)?),
            "maxLength" => n.max_length = Some(count(value)?),
            "minItems" => n.min_items = Some(count(value)?),
            "maxItems" => n.max_items = Some(count(value)?),
            "$ref" => {
                let name = value.as_str()?.strip_prefix("#/$defs/")?;
                // Pointer escapes and nested paths are left to jsonschema.
                if name.is_empty() || name.contains(['/', '~', '%']) {
                    return None;
                }
                n.reference = Some(name.to_owned());
            }
            "$defs" | "$schema" if root => {}
            "title" | "description" | "format" | "$comment" => {
                value.as_str()?;
            }
            "deprecated" | "readOnly" | "writeOnly" => {
                value.as_bool()?;
            }
            "examples" => {
                value.as_array()?;
            }
            "default" => {}
            k if k.starts_with("x-") => {}
            _ => return None,
        }
    }
    Some(n)
}

fn types(value: &Value) -> Option<u8> {
    let one = |name: &str| {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            // A number of any kind; integers are numbers too.
            "number" => NUMBER | INTEGER,
            "string" => STRING,
            "integer" => INTEGER,
            _ => return None,
        })
    };
    match value {
        Value::String(s) => one(s),
        Value::Array(names) if !names.is_empty() => {
            let mut set = 0;
            let mut seen: Vec<&str> = Vec::with_capacity(names.len());
            for name in names {
                let name = name.as_str()?;
                // Names must be unique (the meta-schema says so).
                if seen.contains(&name) {
                    return None;
                }
                seen.push(name);
                set |= one(name)?;
            }
            Some(set)
        }
        _ => None,
    }
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Number(n) => Some(n.clone()),
        _ => None,
    }
}

/// A non-negative integer keyword value (`minLength`, ...).
fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

/// The type bit of an instance; an integer-valued number is both a number and an
/// integer (2020-12: 1.0 is an integer).
fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Number(n) => {
            let integral = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            if integral { NUMBER | INTEGER } else { NUMBER }
        }
    }
}

/// Compares two numbers by value, exactly: an integer against a float is not rounded to
/// a float first (9007199254740993 is above 9007199254740992.0).
fn compare(a: &Number, b: &Number) -> Option<std::cmp::Ordering> {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => int_against_float(x, b.as_f64()?),
        (None, Some(y)) => int_against_float(y, a.as_f64()?).map(std::cmp::Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// `i` compared with `f`.
fn int_against_float(i: i128, f: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    if f.is_nan() {
        return None;
    }
    // Beyond any i64 or u64 the integer cannot reach the float.
    if f >= 1e20 {
        return Some(Less);
    }
    if f <= -1e20 {
        return Some(Greater);
    }
    let whole = f.trunc();
    // Exact: |whole| < 1e20 fits an i128, and a float's integer part converts exactly.
    Some(match i.cmp(&(whole as i128)) {
        Equal if f > whole => Less,
        Equal if f < whole => Greater,
        other => other,
    })
}

/// JSON equality as `enum` and `const` define it: numbers by value, objects regardless
/// of member order.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(std::cmp::Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| equal(p, q)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(schema: &Value) -> jsonschema::Validator {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .expect("test schemas compile")
    }

    fn subset_schemas() -> Vec<Value> {
        vec![
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}),
            json!({"type":"object","properties":{"n":{"type":"integer","format":"int32"},"r":{"type":"number"},"b":{"type":"boolean"}}}),
            json!({"type":"object","properties":{"o":{"type":["string","null"]}},"required":[]}),
            json!({"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}),
            json!({"type":"object","properties":{"u":{"$ref":"#/$defs/Unit"}},"$defs":{"Unit":{"type":"string","enum":["c","f"]}}}),
            json!({"type":"object","properties":{"p":{"$ref":"#/$defs/P","description":"d"}},"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}),
            json!({"type":"object","properties":{"l":{"type":["integer","null"],"minimum":0,"maximum":10}}}),
            json!({"type":"object","properties":{"c":{"type":"integer","minimum":-9007199254740991_i64,"maximum":9007199254740991_i64}}}),
            json!({"type":"object","properties":{"e":{"exclusiveMinimum":1.5,"exclusiveMaximum":3}}}),
            json!({"type":"object","properties":{"big":{"maximum":9007199254740992.0_f64,"minimum":-2.5}}}),
            json!({"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3}}}),
            json!({"type":"object","properties":{"k":{"const":{"a":[1,2.0]}}}}),
            json!({"type":"object","properties":{"m":{"enum":[1,"x",null,[1],{"a":1}]}}}),
            json!({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}),
            json!({"type":"object","properties":{"t":{"$ref":"#/$defs/Tree"}},"$defs":{"Tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Tree"}}}}}}),
            json!({"type":"object","x-extra":1,"properties":{"h":{"type":"string","x-mcp-header":"H","default":"a","examples":["b"],"deprecated":false}}}),
            json!({"type":["object","array"],"items":{"type":"number"}}),
            json!({"properties":{"n":{"type":["number","integer"]},"i":{"type":["integer","string"]}}}),
            json!({}),
        ]
    }

    /// Schemas inside the subset: recognised, and valid exactly where jsonschema says.
    #[test]
    fn agrees_with_jsonschema() {
        let schemas = subset_schemas();
        let instances = [
            json!({"text":"hi"}),
            json!({"text":1}),
            json!({"text":"hi","extra":true}),
            json!({}),
            json!(null),
            json!([]),
            json!([1, 2.5]),
            json!([1, "x"]),
            json!({"n":1,"r":2.5,"b":true}),
            json!({"n":1.0}),
            json!({"n":1.5}),
            json!({"n":"1"}),
            json!({"o":null}),
            json!({"o":3}),
            json!({"tags":[]}),
            json!({"tags":["a"]}),
            json!({"tags":["a","b","c"]}),
            json!({"tags":["a",1]}),
            json!({"u":"c"}),
            json!({"u":"k"}),
            json!({"p":{"x":1}}),
            json!({"p":{}}),
            json!({"p":{"x":"1"}}),
            json!({"l":0}),
            json!({"l":-1}),
            json!({"l":10}),
            json!({"l":11}),
            json!({"l":null}),
            json!({"c":9007199254740991_i64}),
            json!({"c":9007199254740992_i64}),
            json!({"c":-9007199254740992_i64}),
            json!({"c":18446744073709551615_u64}),
            json!({"e":1.5}),
            json!({"e":2}),
            json!({"e":3}),
            json!({"e":"x"}),
            json!({"big":9007199254740992_u64}),
            json!({"big":9007199254740993_u64}),
            json!({"big":18446744073709551615_u64}),
            json!({"big":-2}),
            json!({"big":-3}),
            json!({"big":-2.5}),
            json!({"big":-2.6}),
            json!({"s":"ab"}),
            json!({"s":"é€😀"}),
            json!({"s":"a"}),
            json!({"s":"abcd"}),
            json!({"k":{"a":[1.0,2]}}),
            json!({"k":{"a":[1,3]}}),
            json!({"m":1.0}),
            json!({"m":{"a":1}}),
            json!({"m":[1]}),
            json!({"m":"y"}),
            json!({"sum":3}),
            json!({"sum":3.5}),
            json!({"t":{"kids":[{"kids":[]},{}]}}),
            json!({"t":{"kids":[{"kids":[1]}]}}),
            json!({"h":"x"}),
            json!({"h":false}),
            json!("text"),
            json!(7),
            json!({"n":2.5,"i":2}),
            json!({"n":"x"}),
            json!({"i":2.5}),
            json!({"i":"2"}),
        ];
        for schema in &schemas {
            let simple = SimpleSchema::recognise(schema)
                .unwrap_or_else(|| panic!("not recognised: {schema}"));
            let full = reference(schema);
            for instance in &instances {
                assert_eq!(
                    simple.is_valid(instance),
                    full.is_valid(instance),
                    "schema {schema}\ninstance {instance}"
                );
            }
        }
    }

    /// The same on a few thousand generated instances: random shapes over the property
    /// names and value kinds the schemas use (a fixed seed, so a failure reproduces).
    #[test]
    fn agrees_with_jsonschema_on_generated_instances() {
        struct Lcg(u64);
        impl Lcg {
            fn next(&mut self, n: u64) -> u64 {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (self.0 >> 33) % n
            }
        }
        const NAMES: [&str; 16] = [
            "text", "n", "r", "b", "o", "tags", "u", "p", "x", "l", "c", "e", "s", "k", "m", "t",
        ];
        fn value(rng: &mut Lcg, depth: u32) -> Value {
            match rng.next(if depth > 2 { 9 } else { 11 }) {
                0 => Value::Null,
                1 => json!(rng.next(2) == 1),
                2 => json!(rng.next(25) as i64 - 12),
                3 => json!((rng.next(40) as f64 - 20.0) / 4.0),
                4 => json!(["", "a", "ab", "abcd", "c", "f", "x", "1"][rng.next(8) as usize]),
                5 => json!(9_007_199_254_740_990_u64 + rng.next(4)),
                6 => json!(-9_007_199_254_740_993_i64 + rng.next(3) as i64),
                7 => json!(1.0),
                8 => json!("é€😀"),
                9 => Value::Array((0..rng.next(4)).map(|_| value(rng, depth + 1)).collect()),
                _ => Value::Object(
                    (0..rng.next(4))
                        .map(|_| {
                            (
                                NAMES[rng.next(16) as usize].to_owned(),
                                value(rng, depth + 1),
                            )
                        })
                        .collect(),
                ),
            }
        }
        let mut rng = Lcg(7);
        let schemas: Vec<(Value, SimpleSchema, jsonschema::Validator)> = subset_schemas()
            .into_iter()
            .map(|s| {
                let simple = SimpleSchema::recognise(&s).expect("recognised");
                let full = reference(&s);
                (s, simple, full)
            })
            .collect();
        for _ in 0..3000 {
            let instance = value(&mut rng, 0);
            for (schema, simple, full) in &schemas {
                assert_eq!(
                    simple.is_valid(&instance),
                    full.is_valid(&instance),
                    "schema {schema}\ninstance {instance}"
                );
            }
        }
    }

    /// Anything outside the subset goes to jsonschema whole.
    #[test]
    fn everything_else_is_left_to_jsonschema() {
        for schema in [
            json!(true),
            json!({"type":"string","pattern":"^a"}),
            json!({"anyOf":[{"type":"string"}]}),
            json!({"type":"object","properties":{"a":{"type":"string","format":1}}}),
            json!({"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}),
            json!({"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{}}}),
            json!({"type":"object","properties":{"a":{"$ref":"#/$defs/A~1B"}},"$defs":{"A/B":{}}}),
            json!({"type":"object","properties":{"a":{"$ref":"#/$defs/Missing"}}}),
            json!({"$defs":{"A":{"$ref":"#/$defs/A"}},"properties":{"a":{"$ref":"#/$defs/A"}}}),
            json!({"type":"object","properties":{"a":{"$defs":{}}}}),
            json!({"type":"strin"}),
            json!({"type":["string","string"]}),
            json!({"type":["number","number"]}),
            json!({"type":[]}),
            json!({"required":["a","a"]}),
            json!({"additionalProperties":{"type":"string"}}),
            json!({"items":[{"type":"string"}]}),
            json!({"minLength":-1}),
            json!({"minimum":"1"}),
            json!({"uniqueItems":true}),
            json!({"$id":"https://example.com/s"}),
        ] {
            assert!(SimpleSchema::recognise(&schema).is_none(), "{schema}");
        }
    }
}

//! Surface snapshots on real builds: for each kind of change, a small server is built
//! before and after it (with `#[tool]` functions added by name, or with the builder), its
//! surface captured through the in-process client, and the comparison's classification
//! checked line by line. Then the snapshot file's life: written on purpose only, kept on
//! additive changes, refused on breaking ones.

use presa::auth::{Authorization, TokenError, TokenVerifier, Verifying};
use presa::testing::{
    ChangeClass, MAX_PAGES, Surface, SurfaceDiff, SurfaceError, SurfaceOutcome, SurfaceSnapshot,
};
use presa::{
    Implementation, Prompt, PromptArgument, PromptGet, Resource, ResourceRead, ResourceTemplate,
    Server, ServerBuilder, Tool, ToolCall,
};
use serde_json::{Value, json};

use ChangeClass::{Additive, Breaking, Cosmetic};

fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("surface-test", "1.0.0"))
}

fn build(builder: ServerBuilder) -> Server {
    builder.build().expect("the test server builds")
}

/// A tool with this input schema (and output schema, if any).
fn tool(name: &str, input: Value, output: Option<Value>) -> Tool {
    let tool = Tool::new(name)
        .description("A test tool")
        .input_schema(input);
    let tool = match output {
        Some(output) => tool.output_schema(output),
        None => tool,
    };
    tool.handler(|_c: ToolCall| async { "ok" })
}

/// A server with one tool `t` taking `input`.
fn taking(input: Value) -> Server {
    build(builder().tool(tool("t", input, None)))
}

/// A server with one tool `t` returning `output`.
fn returning(output: Value) -> Server {
    build(builder().tool(tool("t", json!({"type": "object"}), Some(output))))
}

/// An input schema with one property `x` of `schema`, required or not.
fn arg(schema: Value, required: bool) -> Value {
    let required: Vec<&str> = if required { vec!["x"] } else { vec![] };
    json!({"type": "object", "properties": {"x": schema}, "required": required})
}

/// `before`'s and `after`'s surfaces compared.
async fn diff(before: &Server, after: &Server) -> SurfaceDiff {
    let b = Surface::of(before).await.expect("captured");
    let a = Surface::of(after).await.expect("captured");
    b.diff(&a)
}

/// Each change as (class, item, path, what), in report order.
fn lines(diff: &SurfaceDiff) -> Vec<(ChangeClass, String, String, String)> {
    diff.changes()
        .iter()
        .map(|c| (c.class, c.item.clone(), c.path.clone(), c.what.clone()))
        .collect()
}

/// Asserts the comparison found exactly `expected`, as (class, item, path, what).
#[track_caller]
fn assert_changes(diff: &SurfaceDiff, expected: &[(ChangeClass, &str, &str, &str)]) {
    let expected: Vec<_> = expected
        .iter()
        .map(|(c, i, p, w)| (*c, (*i).to_owned(), (*p).to_owned(), (*w).to_owned()))
        .collect();
    assert_eq!(lines(diff), expected, "report:\n{diff}");
}

/// The two builds of each `#[tool]` case: a module per version, the same function names.
mod v1 {
    use presa::Json;
    use schemars::JsonSchema;
    use serde::Serialize;

    /// Searches.
    #[presa::tool]
    pub async fn search(query: String) -> String {
        query
    }

    /// Fetches.
    #[presa::tool]
    pub async fn fetch(url: String) -> String {
        url
    }

    /// Looks up the weather.
    #[presa::tool]
    pub async fn weather(#[header("Region")] region: String) -> String {
        region
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Forecast {
        pub temp: f64,
        pub summary: String,
    }

    /// Forecasts.
    #[presa::tool]
    pub async fn forecast(day: u32) -> Json<Forecast> {
        Json(Forecast {
            temp: f64::from(day),
            summary: String::new(),
        })
    }
}

mod v2 {
    use presa::Json;
    use schemars::JsonSchema;
    use serde::Serialize;

    /// Searches, with a limit.
    #[presa::tool(name = "search", description = "Searches.")]
    pub async fn search_limit(query: String, limit: u32) -> String {
        format!("{query}{limit}")
    }

    /// Searches, with an optional limit.
    #[presa::tool(name = "search", description = "Searches.")]
    pub async fn search_maybe_limit(query: String, limit: Option<u32>) -> String {
        format!("{query}{limit:?}")
    }

    /// Searches.
    #[presa::tool(name = "search")]
    pub async fn search_renamed(q: String) -> String {
        q
    }

    /// Looks up the weather.
    #[presa::tool(name = "weather")]
    pub async fn weather_area(#[header("Area")] region: String) -> String {
        region
    }

    /// Looks up the weather.
    #[presa::tool(name = "weather")]
    pub async fn weather_unmirrored(region: String) -> String {
        region
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Forecast {
        pub temp: f64,
    }

    /// Forecasts.
    #[presa::tool(name = "forecast")]
    pub async fn forecast_less(day: u32) -> Json<Forecast> {
        Json(Forecast {
            temp: f64::from(day),
        })
    }

    #[derive(Serialize, JsonSchema)]
    pub struct Fuller {
        pub temp: f64,
        pub summary: String,
        pub humidity: f64,
    }

    /// Forecasts.
    #[presa::tool(name = "forecast")]
    pub async fn forecast_more(day: u32) -> Json<Fuller> {
        Json(Fuller {
            temp: f64::from(day),
            summary: String::new(),
            humidity: 0.0,
        })
    }
}

mod tools {
    use super::*;

    #[tokio::test]
    async fn a_removed_tool_is_breaking_and_a_new_one_additive() {
        let both = build(builder().add::<v1::search>().add::<v1::fetch>());
        let one = build(builder().add::<v1::search>());
        let d = diff(&both, &one).await;
        assert!(d.is_breaking());
        assert_changes(&d, &[(Breaking, "tool \"fetch\"", "", "removed tool")]);
        assert_eq!(d.to_string(), "breaking  tool \"fetch\": removed tool\n");
        let d = diff(&one, &both).await;
        assert!(!d.is_breaking());
        assert_changes(&d, &[(Additive, "tool \"fetch\"", "", "new tool")]);
    }

    #[tokio::test]
    async fn a_new_required_argument_is_breaking() {
        let before = build(builder().add::<v1::search>());
        let after = build(builder().add::<v2::search_limit>());
        assert_changes(
            &diff(&before, &after).await,
            &[(
                Breaking,
                "tool \"search\"",
                "/inputSchema/properties/limit",
                "new required argument",
            )],
        );
    }

    #[tokio::test]
    async fn a_new_optional_argument_is_additive_and_its_removal_breaking() {
        let before = build(builder().add::<v1::search>());
        let after = build(builder().add::<v2::search_maybe_limit>());
        assert_changes(
            &diff(&before, &after).await,
            &[(
                Additive,
                "tool \"search\"",
                "/inputSchema/properties/limit",
                "new optional argument",
            )],
        );
        assert_changes(
            &diff(&after, &before).await,
            &[(
                Breaking,
                "tool \"search\"",
                "/inputSchema/properties/limit",
                "removed argument",
            )],
        );
    }

    /// `Option<u32>` to `u32`: the argument is required now, and `null` is no longer
    /// accepted; both break a caller that left it out or sent `null`.
    #[tokio::test]
    async fn an_optional_argument_made_required_is_breaking() {
        let before = build(builder().add::<v2::search_maybe_limit>());
        let after = build(builder().add::<v2::search_limit>());
        assert_changes(
            &diff(&before, &after).await,
            &[
                (
                    Breaking,
                    "tool \"search\"",
                    "/inputSchema/properties/limit/type",
                    "narrowed type",
                ),
                (
                    Breaking,
                    "tool \"search\"",
                    "/inputSchema/required",
                    "argument became required",
                ),
            ],
        );
        // The other way, both widen.
        let back = diff(&after, &before).await;
        assert!(!back.is_breaking(), "{back}");
        assert_eq!(back.changes().len(), 2, "{back}");
    }

    #[tokio::test]
    async fn a_required_argument_made_optional_is_additive() {
        let before = taking(arg(json!({"type": "string"}), true));
        let after = taking(arg(json!({"type": "string"}), false));
        assert_changes(
            &diff(&before, &after).await,
            &[(
                Additive,
                "tool \"t\"",
                "/inputSchema/required",
                "argument became optional",
            )],
        );
    }

    #[tokio::test]
    async fn a_renamed_argument_is_breaking() {
        let before = build(builder().add::<v1::search>());
        let after = build(builder().add::<v2::search_renamed>());
        let d = diff(&before, &after).await;
        assert_changes(
            &d,
            &[(
                Breaking,
                "tool \"search\"",
                "/inputSchema/properties",
                "renamed argument",
            )],
        );
        let change = &d.changes()[0];
        assert_eq!(change.before, Some(json!("query")));
        assert_eq!(change.after, Some(json!("q")));
    }

    #[tokio::test]
    async fn a_type_removed_from_a_union_is_breaking_and_one_added_additive() {
        let nullable = taking(arg(json!({"type": ["string", "null"]}), false));
        let string = taking(arg(json!({"type": "string"}), false));
        let path = "/inputSchema/properties/x/type";
        assert_changes(
            &diff(&nullable, &string).await,
            &[(Breaking, "tool \"t\"", path, "narrowed type")],
        );
        assert_changes(
            &diff(&string, &nullable).await,
            &[(Additive, "tool \"t\"", path, "widened type")],
        );
    }

    /// `integer` is the part of `number` without a fraction.
    #[tokio::test]
    async fn number_to_integer_narrows_and_integer_to_number_widens() {
        let number = taking(arg(json!({"type": "number"}), true));
        let integer = taking(arg(json!({"type": "integer"}), true));
        let untyped = taking(arg(json!({}), true));
        let path = "/inputSchema/properties/x/type";
        assert_changes(
            &diff(&number, &integer).await,
            &[(Breaking, "tool \"t\"", path, "narrowed type")],
        );
        assert_changes(
            &diff(&integer, &number).await,
            &[(Additive, "tool \"t\"", path, "widened type")],
        );
        assert_changes(
            &diff(&untyped, &number).await,
            &[(Breaking, "tool \"t\"", path, "narrowed type")],
        );
    }

    #[tokio::test]
    async fn an_enum_value_removed_is_breaking_and_one_added_additive() {
        let three = taking(arg(
            json!({"type": "string", "enum": ["a", "b", "c"]}),
            true,
        ));
        let two = taking(arg(json!({"type": "string", "enum": ["a", "b"]}), true));
        let free = taking(arg(json!({"type": "string"}), true));
        let path = "/inputSchema/properties/x/enum";
        let d = diff(&three, &two).await;
        assert_changes(&d, &[(Breaking, "tool \"t\"", path, "enum value removed")]);
        assert_eq!(d.changes()[0].before, Some(json!("c")));
        assert_changes(
            &diff(&two, &three).await,
            &[(Additive, "tool \"t\"", path, "new enum value")],
        );
        assert_changes(
            &diff(&free, &two).await,
            &[(Breaking, "tool \"t\"", path, "narrowed to an enum")],
        );
        assert_changes(
            &diff(&two, &free).await,
            &[(Additive, "tool \"t\"", path, "enum lifted")],
        );
    }

    /// Each bound, added or tightened, breaks; removed or loosened, adds.
    #[tokio::test]
    async fn a_new_or_tightened_constraint_is_breaking_and_a_loosened_one_additive() {
        let cases = [
            ("maxLength", json!(100), json!(10)),
            ("maxLength", Value::Null, json!(10)),
            ("minLength", json!(1), json!(2)),
            ("maximum", json!(10), json!(9.5)),
            ("exclusiveMaximum", Value::Null, json!(10)),
            ("minimum", json!(0), json!(1)),
            ("exclusiveMinimum", json!(0), json!(0.5)),
            ("maxItems", json!(5), json!(4)),
            ("minItems", Value::Null, json!(1)),
        ];
        for (keyword, looser, tighter) in cases {
            let with = |bound: &Value| {
                let mut schema = json!({});
                if !bound.is_null() {
                    schema[keyword] = bound.clone();
                }
                taking(arg(schema, true))
            };
            let (loose, tight) = (with(&looser), with(&tighter));
            let path = format!("/inputSchema/properties/x/{keyword}");
            assert_changes(
                &diff(&loose, &tight).await,
                &[(
                    Breaking,
                    "tool \"t\"",
                    &path,
                    &format!("{keyword} tightened"),
                )],
            );
            assert_changes(
                &diff(&tight, &loose).await,
                &[(
                    Additive,
                    "tool \"t\"",
                    &path,
                    &format!("{keyword} loosened"),
                )],
            );
        }
    }

    #[tokio::test]
    async fn a_new_pattern_or_format_is_breaking_and_its_removal_additive() {
        for (keyword, value) in [("pattern", json!("^[a-z]+$")), ("format", json!("uri"))] {
            let free = taking(arg(json!({"type": "string"}), true));
            let mut constrained = json!({"type": "string"});
            constrained[keyword] = value;
            let constrained = taking(arg(constrained, true));
            let path = format!("/inputSchema/properties/x/{keyword}");
            assert_changes(
                &diff(&free, &constrained).await,
                &[(Breaking, "tool \"t\"", &path, &format!("{keyword} added"))],
            );
            assert_changes(
                &diff(&constrained, &free).await,
                &[(Additive, "tool \"t\"", &path, &format!("{keyword} removed"))],
            );
        }
    }

    /// The rest of the input rows of the table: each change one way, then back.
    #[tokio::test]
    async fn the_other_input_keywords_narrow_and_widen_as_the_table_says() {
        let cases = [
            (
                json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
                json!({"anyOf": [{"type": "string"}]}),
                "/inputSchema/properties/x/anyOf",
                ("alternative removed", "new alternative"),
            ),
            (
                json!({"type": "array"}),
                json!({"type": "array", "uniqueItems": true}),
                "/inputSchema/properties/x/uniqueItems",
                ("uniqueItems required", "uniqueItems lifted"),
            ),
            (
                json!({"type": "number"}),
                json!({"type": "number", "multipleOf": 5}),
                "/inputSchema/properties/x/multipleOf",
                ("multipleOf added", "multipleOf removed"),
            ),
            (
                json!({"type": "string"}),
                json!({"type": "string", "const": "on"}),
                "/inputSchema/properties/x/const",
                ("const added", "const removed"),
            ),
            (
                json!({"type": "string"}),
                json!({"type": "string", "not": {"const": "off"}}),
                "/inputSchema/properties/x/not",
                ("keyword not added", "not removed"),
            ),
            (
                json!({"type": "array", "items": {"type": ["string", "integer"]}}),
                json!({"type": "array", "items": {"type": "string"}}),
                "/inputSchema/properties/x/items/type",
                ("narrowed type", "widened type"),
            ),
        ];
        for (wide, narrow, path, (narrowed, widened)) in cases {
            let (wide, narrow) = (taking(arg(wide, true)), taking(arg(narrow, true)));
            assert_changes(
                &diff(&wide, &narrow).await,
                &[(Breaking, "tool \"t\"", path, narrowed)],
            );
            assert_changes(
                &diff(&narrow, &wide).await,
                &[(Additive, "tool \"t\"", path, widened)],
            );
        }
    }

    /// A caller that leaves the argument out gets another value: breaking, both ways.
    #[tokio::test]
    async fn a_changed_default_is_breaking() {
        let with =
            |default: Value| taking(arg(json!({"type": "integer", "default": default}), false));
        let path = "/inputSchema/properties/x/default";
        assert_changes(
            &diff(&with(json!(10)), &with(json!(20))).await,
            &[(Breaking, "tool \"t\"", path, "default changed")],
        );
    }

    #[tokio::test]
    async fn closing_additional_properties_is_breaking_and_opening_them_additive() {
        let open = taking(json!({"type": "object", "properties": {"x": {}}}));
        let closed = taking(json!({
            "type": "object", "properties": {"x": {}}, "additionalProperties": false
        }));
        let path = "/inputSchema/additionalProperties";
        assert_changes(
            &diff(&open, &closed).await,
            &[(Breaking, "tool \"t\"", path, "additionalProperties closed")],
        );
        assert_changes(
            &diff(&closed, &open).await,
            &[(Additive, "tool \"t\"", path, "additionalProperties opened")],
        );
    }

    #[tokio::test]
    async fn nested_properties_are_compared_as_arguments_are() {
        let nested = |inner: Value| {
            taking(arg(
                json!({"type": "object", "properties": inner, "required": ["a"]}),
                true,
            ))
        };
        let before = nested(json!({"a": {"type": "string"}}));
        let after = nested(json!({"a": {"type": "string"}, "b": {"type": "integer"}}));
        assert_changes(
            &diff(&before, &after).await,
            &[(
                Additive,
                "tool \"t\"",
                "/inputSchema/properties/x/properties/b",
                "new optional property",
            )],
        );
        assert_changes(
            &diff(&after, &before).await,
            &[(
                Breaking,
                "tool \"t\"",
                "/inputSchema/properties/x/properties/b",
                "removed property",
            )],
        );
    }

    #[tokio::test]
    async fn a_changed_header_mapping_is_breaking() {
        let region = build(builder().add::<v1::weather>());
        let area = build(builder().add::<v2::weather_area>());
        let none = build(builder().add::<v2::weather_unmirrored>());
        let path = "/inputSchema/properties/region/x-mcp-header";
        let renamed = diff(&region, &area).await;
        assert_changes(
            &renamed,
            &[(Breaking, "tool \"weather\"", path, "header mapping changed")],
        );
        assert_eq!(renamed.changes()[0].before, Some(json!("Region")));
        assert_eq!(renamed.changes()[0].after, Some(json!("Area")));
        for (before, after) in [(&none, &region), (&region, &none)] {
            assert_changes(
                &diff(before, after).await,
                &[(Breaking, "tool \"weather\"", path, "header mapping changed")],
            );
        }
    }

    #[tokio::test]
    async fn a_removed_output_field_is_breaking_and_a_new_one_additive() {
        let before = build(builder().add::<v1::forecast>());
        let less = build(builder().add::<v2::forecast_less>());
        let more = build(builder().add::<v2::forecast_more>());
        assert_changes(
            &diff(&before, &less).await,
            &[(
                Breaking,
                "tool \"forecast\"",
                "/outputSchema/properties/summary",
                "removed output field",
            )],
        );
        // The structure's new name changes the schema's `title` too: text for people.
        assert_changes(
            &diff(&before, &more).await,
            &[
                (
                    Additive,
                    "tool \"forecast\"",
                    "/outputSchema/properties/humidity",
                    "new output field",
                ),
                (
                    Cosmetic,
                    "tool \"forecast\"",
                    "/outputSchema/title",
                    "title changed",
                ),
            ],
        );
    }

    #[tokio::test]
    async fn a_narrowed_or_widened_output_type_is_breaking() {
        let out = |t: Value| {
            returning(json!({
                "type": "object", "properties": {"v": {"type": t}}, "required": ["v"]
            }))
        };
        let (nullable, number, integer) = (
            out(json!(["number", "null"])),
            out(json!("number")),
            out(json!("integer")),
        );
        let path = "/outputSchema/properties/v/type";
        assert_changes(
            &diff(&nullable, &number).await,
            &[(Breaking, "tool \"t\"", path, "narrowed output type")],
        );
        assert_changes(
            &diff(&number, &integer).await,
            &[(Breaking, "tool \"t\"", path, "narrowed output type")],
        );
        assert_changes(
            &diff(&number, &nullable).await,
            &[(Breaking, "tool \"t\"", path, "widened output type")],
        );
    }

    /// A reader may match the values it knows: a new one breaks it, and one gone is a
    /// narrowed output, breaking as the other narrowings are.
    #[tokio::test]
    async fn any_output_enum_change_is_breaking() {
        let out = |values: Value| {
            returning(json!({
                "type": "object",
                "properties": {"v": {"type": "string", "enum": values}},
                "required": ["v"]
            }))
        };
        let (two, three) = (out(json!(["a", "b"])), out(json!(["a", "b", "c"])));
        let path = "/outputSchema/properties/v/enum";
        assert_changes(
            &diff(&two, &three).await,
            &[(Breaking, "tool \"t\"", path, "new output enum value")],
        );
        assert_changes(
            &diff(&three, &two).await,
            &[(Breaking, "tool \"t\"", path, "output enum value removed")],
        );
        let free = returning(json!({
            "type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]
        }));
        assert_changes(
            &diff(&two, &free).await,
            &[(Breaking, "tool \"t\"", path, "output enum lifted")],
        );
    }

    #[tokio::test]
    async fn an_output_field_no_longer_required_is_breaking() {
        let out = |required: Value| {
            returning(json!({
                "type": "object", "properties": {"v": {"type": "string"}}, "required": required
            }))
        };
        let (always, maybe) = (out(json!(["v"])), out(json!([])));
        assert_changes(
            &diff(&always, &maybe).await,
            &[(
                Breaking,
                "tool \"t\"",
                "/outputSchema/required",
                "output field may be absent",
            )],
        );
        assert_changes(
            &diff(&maybe, &always).await,
            &[(
                Additive,
                "tool \"t\"",
                "/outputSchema/required",
                "output field now always present",
            )],
        );
    }

    #[tokio::test]
    async fn an_output_schema_removed_is_breaking_and_one_added_additive() {
        let plain = taking(json!({"type": "object"}));
        let typed = returning(json!({"type": "object", "properties": {"v": {}}}));
        assert_changes(
            &diff(&typed, &plain).await,
            &[(
                Breaking,
                "tool \"t\"",
                "/outputSchema",
                "output schema removed",
            )],
        );
        assert_changes(
            &diff(&plain, &typed).await,
            &[(Additive, "tool \"t\"", "/outputSchema", "new output schema")],
        );
    }

    #[tokio::test]
    async fn a_stricter_scope_is_breaking_and_a_looser_one_additive() {
        let scoped = |scopes: &[&str]| {
            build(
                builder().tool(tool("t", json!({"type": "object"}), None).scopes(scopes.to_vec())),
            )
        };
        let (read, both) = (
            scoped(&["notes:read"]),
            scoped(&["notes:read", "notes:write"]),
        );
        let d = diff(&read, &both).await;
        assert_changes(
            &d,
            &[(
                Breaking,
                "tool \"t\"",
                "/x-presa-scopes",
                "stricter scope: newly needed",
            )],
        );
        assert_eq!(d.changes()[0].after, Some(json!("notes:write")));
        assert_changes(
            &diff(&both, &read).await,
            &[(
                Additive,
                "tool \"t\"",
                "/x-presa-scopes",
                "scope no longer needed",
            )],
        );
        assert_changes(
            &diff(&scoped(&[]), &read).await,
            &[(
                Breaking,
                "tool \"t\"",
                "/x-presa-scopes",
                "stricter scope: newly needed",
            )],
        );
    }

    #[tokio::test]
    async fn description_and_annotation_changes_are_cosmetic() {
        let described = |text: &str, read_only: bool| {
            let input = arg(json!({"type": "string", "description": text}), true);
            let mut annotations = presa::ToolAnnotations::default();
            annotations.read_only_hint = Some(read_only);
            build(
                builder().tool(
                    tool("t", input, None)
                        .description(text)
                        .annotations(annotations),
                ),
            )
        };
        let d = diff(&described("old", true), &described("new", false)).await;
        assert!(!d.is_breaking());
        assert_changes(
            &d,
            &[
                (
                    Cosmetic,
                    "tool \"t\"",
                    "/annotations",
                    "annotations changed",
                ),
                (
                    Cosmetic,
                    "tool \"t\"",
                    "/description",
                    "description changed",
                ),
                (
                    Cosmetic,
                    "tool \"t\"",
                    "/inputSchema/properties/x/description",
                    "description changed",
                ),
            ],
        );
    }
}

mod report {
    use super::*;

    /// One line per difference, the breaking ones first, each with its item, its path in
    /// the schema, and the values before and after; long values are cut.
    #[tokio::test]
    async fn the_report_reads_one_line_per_difference_breaking_first() {
        let server = |description: &str, input: Value| {
            build(builder().tool(tool("t", input, None).description(description)))
        };
        let before = server("old", arg(json!({"type": "string"}), false));
        let long = "a description long enough to be cut in the report ".repeat(4);
        let after = server(
            &long,
            json!({
                "type": "object",
                "properties": {
                    "x": {"type": "string", "maxLength": 3},
                    "y": {"type": "integer"}
                },
                "required": []
            }),
        );
        let d = diff(&before, &after).await;
        let cut: String = json!(long).to_string().chars().take(120).collect();
        assert_eq!(
            d.to_string(),
            format!(
                "breaking  tool \"t\" /inputSchema/properties/x/maxLength: maxLength tightened: (absent) → 3\n\
                 additive  tool \"t\" /inputSchema/properties/y: new optional argument: (absent) → {{\"type\":\"integer\"}}\n\
                 cosmetic  tool \"t\" /description: description changed: \"old\" → {cut}…\n"
            )
        );
        assert_eq!(d.of_class(Breaking).count(), 1);
        assert_eq!(d.of_class(Additive).count(), 1);
        assert_eq!(d.of_class(Cosmetic).count(), 1);
    }
}

mod prompts {
    use super::*;

    fn prompt(name: &str, args: &[(&str, bool)]) -> Prompt {
        let mut prompt = Prompt::new(name).description("A test prompt");
        for (arg, required) in args {
            prompt = prompt.argument(PromptArgument::new(*arg).required(*required));
        }
        prompt.handler(|_g: PromptGet| async { String::from("hi") })
    }

    fn with(prompts: Vec<Prompt>) -> Server {
        build(prompts.into_iter().fold(builder(), ServerBuilder::prompt))
    }

    #[tokio::test]
    async fn a_removed_prompt_is_breaking_and_a_new_one_additive() {
        let both = with(vec![prompt("a", &[]), prompt("b", &[])]);
        let one = with(vec![prompt("a", &[])]);
        assert_changes(
            &diff(&both, &one).await,
            &[(Breaking, "prompt \"b\"", "", "removed prompt")],
        );
        assert_changes(
            &diff(&one, &both).await,
            &[(Additive, "prompt \"b\"", "", "new prompt")],
        );
    }

    #[tokio::test]
    async fn prompt_arguments_are_classified_as_tool_arguments_are() {
        let base = with(vec![prompt("p", &[("code", true)])]);
        let cases = [
            (
                vec![prompt("p", &[])],
                (Breaking, "/arguments/code", "removed argument"),
            ),
            (
                vec![prompt("p", &[("code", true), ("lang", true)])],
                (Breaking, "/arguments/lang", "new required argument"),
            ),
            (
                vec![prompt("p", &[("code", true), ("lang", false)])],
                (Additive, "/arguments/lang", "new optional argument"),
            ),
            (
                vec![prompt("p", &[("code", false)])],
                (
                    Additive,
                    "/arguments/code/required",
                    "argument became optional",
                ),
            ),
        ];
        for (after, (class, path, what)) in cases {
            assert_changes(
                &diff(&base, &with(after)).await,
                &[(class, "prompt \"p\"", path, what)],
            );
        }
        let optional = with(vec![prompt("p", &[("code", false)])]);
        assert_changes(
            &diff(&optional, &base).await,
            &[(
                Breaking,
                "prompt \"p\"",
                "/arguments/code/required",
                "argument became required",
            )],
        );
    }
}

mod resources {
    use super::*;

    fn resource(uri: &str, mime: &str) -> Resource {
        Resource::new(uri, "a resource")
            .mime_type(mime)
            .handler(|_r: ResourceRead| async { "x" })
    }

    fn template(uri: &str) -> ResourceTemplate {
        ResourceTemplate::new(uri, "a template").handler(|_r: ResourceRead| async { "x" })
    }

    #[tokio::test]
    async fn a_removed_resource_or_template_is_breaking_and_a_new_one_additive() {
        let full = build(
            builder()
                .resource(resource("notes://a", "text/plain"))
                .resource(resource("notes://b", "text/plain"))
                .resource_template(template("notes://{id}"))
                .resource_template(template("files://{path}")),
        );
        let less = build(
            builder()
                .resource(resource("notes://a", "text/plain"))
                .resource_template(template("notes://{id}")),
        );
        assert_changes(
            &diff(&full, &less).await,
            &[
                (Breaking, "resource \"notes://b\"", "", "removed resource"),
                (
                    Breaking,
                    "template \"files://{path}\"",
                    "",
                    "removed template",
                ),
            ],
        );
        assert_changes(
            &diff(&less, &full).await,
            &[
                (Additive, "resource \"notes://b\"", "", "new resource"),
                (Additive, "template \"files://{path}\"", "", "new template"),
            ],
        );
    }

    /// A resource's size and modification time follow its content, not its surface.
    #[tokio::test]
    async fn a_resource_size_and_modification_time_are_left_out() {
        let at = |size: u64, modified: &str| {
            let mut annotations = presa::Annotations::default();
            annotations.last_modified = Some(modified.to_owned());
            annotations.priority = Some(0.5);
            build(
                builder().resource(
                    resource("notes://a", "text/plain")
                        .size(size)
                        .annotations(annotations),
                ),
            )
        };
        let (old, new) = (
            at(10, "2026-01-01T00:00:00Z"),
            at(20, "2026-02-02T00:00:00Z"),
        );
        let surface = Surface::of(&old).await.expect("captured");
        let listed = &surface.as_value()["resources"][0];
        assert!(listed.get("size").is_none(), "{listed}");
        assert_eq!(listed["annotations"], json!({"priority": 0.5}));
        assert!(diff(&old, &new).await.is_empty());
        // A file that still holds them reads as if it did not.
        let mut recorded = surface.as_value().clone();
        recorded["resources"][0]["size"] = json!(10);
        recorded["resources"][0]["annotations"]["lastModified"] = json!("2026-01-01T00:00:00Z");
        let read = Surface::from_json(&recorded.to_string()).expect("reads");
        assert_eq!(read, surface);
    }

    #[tokio::test]
    async fn a_changed_mime_type_is_breaking() {
        let text = build(builder().resource(resource("notes://a", "text/plain")));
        let json = build(builder().resource(resource("notes://a", "application/json")));
        assert_changes(
            &diff(&text, &json).await,
            &[(Breaking, "resource \"notes://a\"", "/mimeType", "changed")],
        );
    }

    #[tokio::test]
    async fn a_scope_on_a_resource_is_recorded_and_compared() {
        let open = build(builder().resource(resource("notes://a", "text/plain")));
        let scoped =
            build(builder().resource(resource("notes://a", "text/plain").scopes(["notes:read"])));
        let surface = Surface::of(&scoped).await.expect("captured");
        assert_eq!(
            surface.as_value()["resources"][0]["x-presa-scopes"],
            json!(["notes:read"])
        );
        assert_changes(
            &diff(&open, &scoped).await,
            &[(
                Breaking,
                "resource \"notes://a\"",
                "/x-presa-scopes",
                "stricter scope: newly needed",
            )],
        );
    }
}

mod server {
    use super::*;

    /// Refuses every token: the in-process capture never presents one.
    struct Refuse;

    impl TokenVerifier for Refuse {
        fn verify<'a>(&'a self, _token: &'a str) -> Verifying<'a> {
            Box::pin(async { Err(TokenError::Invalid("test".into())) })
        }
    }

    fn guarded(required: &[&str]) -> Server {
        let auth = Authorization::new(Refuse)
            .authorization_server("https://auth.example.com")
            .required_scopes(required.to_vec());
        build(
            builder()
                .canonical_uri("https://mcp.example.com")
                .authorization(auth)
                .tool(tool("t", json!({"type": "object"}), None)),
        )
    }

    /// The capture asks as a principal holding the server-wide scopes, and records them.
    #[tokio::test]
    async fn a_server_wide_scope_added_is_breaking() {
        let (one, two) = (guarded(&["mcp"]), guarded(&["mcp", "admin"]));
        let surface = Surface::of(&two)
            .await
            .expect("captured behind authorization");
        assert_eq!(
            surface.as_value()["server"]["x-presa-scopes"],
            json!(["admin", "mcp"])
        );
        assert_eq!(surface.as_value()["tools"][0]["name"], json!("t"));
        assert_changes(
            &diff(&one, &two).await,
            &[(
                Breaking,
                "server",
                "/x-presa-scopes",
                "stricter scope: newly needed",
            )],
        );
        assert_changes(
            &diff(&two, &one).await,
            &[(
                Additive,
                "server",
                "/x-presa-scopes",
                "scope no longer needed",
            )],
        );
    }

    #[tokio::test]
    async fn a_capability_lost_is_breaking_and_instructions_cosmetic() {
        let before = build(
            builder()
                .instructions("old")
                .tool(tool("t", json!({"type": "object"}), None))
                .prompt(Prompt::new("p").handler(|_g: PromptGet| async { String::new() })),
        );
        let after = build(builder().instructions("new").tool(tool(
            "t",
            json!({"type": "object"}),
            None,
        )));
        assert_changes(
            &diff(&before, &after).await,
            &[
                (Breaking, "server", "/capabilities/prompts", "removed"),
                (Breaking, "prompt \"p\"", "", "removed prompt"),
                (Cosmetic, "server", "/instructions", "instructions changed"),
            ],
        );
    }
}

mod capture {
    use super::*;

    fn many(names: &[&str]) -> ServerBuilder {
        names.iter().fold(builder(), |b, n| {
            b.tool(tool(n, json!({"type": "object"}), None))
        })
    }

    /// Every page is followed: five tools at two a page are all in the surface, sorted.
    #[tokio::test]
    async fn every_page_of_a_listing_is_followed() {
        let server = build(many(&["e", "c", "a", "d", "b"]).page_size(2));
        let surface = Surface::of(&server).await.expect("captured");
        let names: Vec<&str> = surface.as_value()["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c", "d", "e"]);
    }

    /// At most `MAX_PAGES` pages are followed: a listing of exactly that many is
    /// captured, one of a page more is refused rather than followed forever.
    #[tokio::test]
    async fn a_listing_is_followed_for_at_most_max_pages() {
        let names: Vec<String> = (0..=MAX_PAGES).map(|i| format!("t{i:05}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let at = build(many(&refs[..MAX_PAGES]).page_size(1));
        let surface = Surface::of(&at).await.expect("captured at the bound");
        assert_eq!(
            surface.as_value()["tools"].as_array().map(Vec::len),
            Some(MAX_PAGES)
        );
        let past = build(many(&refs).page_size(1));
        let err = Surface::of(&past).await.expect_err("one page too many");
        assert!(matches!(err, SurfaceError::Capture { .. }), "{err}");
        assert!(err.to_string().contains("tools/list"), "{err}");
    }

    /// The server's version, the results' `_meta` and the order items were added in do
    /// not change the surface, nor its text.
    #[tokio::test]
    async fn volatile_members_and_order_leave_the_surface_alone() {
        let one = build(many(&["a", "b"]).server_info_in_results(true).page_size(1));
        let other = build(
            Server::builder(Implementation::new("surface-test", "9.9.9"))
                .tool(tool("b", json!({"type": "object"}), None))
                .tool(tool("a", json!({"type": "object"}), None))
                .server_info_in_results(true),
        );
        let (s1, s2) = (
            Surface::of(&one).await.expect("captured"),
            Surface::of(&other).await.expect("captured"),
        );
        assert!(s1.diff(&s2).is_empty(), "{}", s1.diff(&s2));
        assert_eq!(s1.to_json(), s2.to_json());
        assert!(!s1.to_json().contains("9.9.9") && !s1.to_json().contains("1.0.0"));
        assert!(s1.as_value()["server"].get("_meta").is_none());
    }

    /// The text is canonical: members sorted, `required` sorted, two-space indentation,
    /// one final newline; read back, it is the same surface.
    #[tokio::test]
    async fn the_text_is_canonical_and_reads_back() {
        let server = taking(json!({
            "type": "object",
            "required": ["z", "a"],
            "properties": {"z": {"type": "string"}, "a": {"type": "string"}}
        }));
        let surface = Surface::of(&server).await.expect("captured");
        let text = surface.to_json();
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
        assert!(text.contains("\n  \"presaSurface\": 1,\n"), "{text}");
        let required = text.find("\"required\": [\n          \"a\",\n          \"z\"\n        ]");
        assert!(required.is_some(), "{text}");
        let (a, z) = (text.find("\"a\": {"), text.find("\"z\": {"));
        assert!(a < z, "{text}");
        let back = Surface::from_json(&text).expect("reads back");
        assert_eq!(back, surface);
        // Reformatted by hand, it still compares as the same surface.
        let compact = serde_json::to_string(surface.as_value()).expect("json");
        assert!(
            Surface::from_json(&compact)
                .expect("reads")
                .diff(&surface)
                .is_empty()
        );
    }

    #[test]
    fn a_file_of_another_format_is_refused() {
        for (text, reason) in [
            ("[]", "a surface is a JSON object"),
            ("{}", "no `presaSurface` format version"),
            (r#"{"presaSurface": 2}"#, "format version 2"),
            (
                r#"{"presaSurface": 1, "tools": {}}"#,
                "`tools` is not an array",
            ),
            ("{", "EOF"),
        ] {
            let err = Surface::from_json(text).expect_err(text);
            assert!(matches!(err, SurfaceError::Invalid { .. }), "{err}");
            assert!(err.to_string().contains(reason), "{text}: {err}");
        }
    }
}

mod snapshot {
    use super::*;

    fn before() -> Server {
        taking(arg(json!({"type": "string"}), true))
    }

    fn additive() -> Server {
        build(
            builder()
                .tool(tool("t", arg(json!({"type": "string"}), true), None))
                .tool(tool("u", json!({"type": "object"}), None)),
        )
    }

    fn breaking() -> Server {
        taking(arg(json!({"type": "string", "maxLength": 3}), true))
    }

    struct Dir(tempfile::TempDir);

    impl Dir {
        fn new() -> Dir {
            Dir(tempfile::tempdir().expect("a temporary folder"))
        }

        fn file(&self) -> std::path::PathBuf {
            self.0.path().join("tests").join("surface.json")
        }
    }

    #[tokio::test]
    async fn a_missing_file_fails_with_instructions_unless_updating() {
        let dir = Dir::new();
        let err = SurfaceSnapshot::new(dir.file())
            .update(false)
            .check(&before())
            .await
            .expect_err("no file, no update");
        assert!(matches!(err, SurfaceError::Missing { .. }));
        assert!(err.to_string().contains("PRESA_SURFACE=update"), "{err}");
        assert!(!dir.file().exists());

        let written = SurfaceSnapshot::new(dir.file())
            .update(true)
            .check(&before())
            .await
            .expect("written");
        assert!(matches!(
            written,
            SurfaceOutcome::Written { diff: None, .. }
        ));
        let text = std::fs::read_to_string(dir.file()).expect("the file");
        assert_eq!(
            text,
            Surface::of(&before()).await.expect("captured").to_json()
        );
    }

    #[tokio::test]
    async fn an_unchanged_surface_passes_and_leaves_the_file_alone() {
        let dir = Dir::new();
        let snapshot = SurfaceSnapshot::new(dir.file());
        snapshot
            .clone()
            .update(true)
            .check(&before())
            .await
            .expect("written");
        for update in [false, true] {
            let outcome = snapshot.clone().update(update).check(&before()).await;
            assert!(
                matches!(outcome, Ok(SurfaceOutcome::Unchanged)),
                "{outcome:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_additive_change_passes_says_so_and_is_written_only_when_updating() {
        let dir = Dir::new();
        let snapshot = SurfaceSnapshot::new(dir.file());
        snapshot
            .clone()
            .update(true)
            .check(&before())
            .await
            .expect("written");
        let recorded = std::fs::read_to_string(dir.file()).expect("the file");

        let outcome = snapshot
            .clone()
            .update(false)
            .check(&additive())
            .await
            .expect("additive passes");
        let SurfaceOutcome::Compatible { diff, .. } = &outcome else {
            panic!("expected a compatible outcome, got {outcome:?}");
        };
        assert_changes(diff, &[(Additive, "tool \"u\"", "", "new tool")]);
        let message = outcome.to_string();
        assert!(
            message.contains("additive  tool \"u\": new tool"),
            "{message}"
        );
        assert!(message.contains("PRESA_SURFACE=update"), "{message}");
        assert_eq!(
            std::fs::read_to_string(dir.file()).expect("the file"),
            recorded
        );

        let outcome = snapshot
            .update(true)
            .check(&additive())
            .await
            .expect("updated");
        assert!(matches!(
            outcome,
            SurfaceOutcome::Written { diff: Some(_), .. }
        ));
        let rewritten = std::fs::read_to_string(dir.file()).expect("the file");
        assert_eq!(
            rewritten,
            Surface::of(&additive()).await.expect("captured").to_json()
        );
    }

    #[tokio::test]
    async fn a_breaking_change_fails_with_the_report_unless_updating() {
        let dir = Dir::new();
        let snapshot = SurfaceSnapshot::new(dir.file());
        snapshot
            .clone()
            .update(true)
            .check(&before())
            .await
            .expect("written");
        let recorded = std::fs::read_to_string(dir.file()).expect("the file");

        let err = snapshot
            .clone()
            .update(false)
            .check(&breaking())
            .await
            .expect_err("breaking fails");
        let SurfaceError::Breaking { diff, .. } = &err else {
            panic!("expected a breaking error, got {err:?}");
        };
        assert_changes(
            diff,
            &[(
                Breaking,
                "tool \"t\"",
                "/inputSchema/properties/x/maxLength",
                "maxLength tightened",
            )],
        );
        let message = err.to_string();
        assert!(
            message.contains(
                "breaking  tool \"t\" /inputSchema/properties/x/maxLength: maxLength tightened: (absent) → 3"
            ),
            "{message}"
        );
        assert!(message.contains("PRESA_SURFACE=update"), "{message}");
        assert_eq!(
            std::fs::read_to_string(dir.file()).expect("the file"),
            recorded
        );

        let outcome = snapshot
            .update(true)
            .check(&breaking())
            .await
            .expect("updated");
        assert!(
            matches!(outcome, SurfaceOutcome::Written { diff: Some(d), .. } if d.is_breaking())
        );
        let rewritten = std::fs::read_to_string(dir.file()).expect("the file");
        assert_eq!(
            rewritten,
            Surface::of(&breaking()).await.expect("captured").to_json()
        );
    }

    #[tokio::test]
    async fn an_unreadable_file_fails_unless_updating() {
        let dir = Dir::new();
        std::fs::create_dir_all(dir.file().parent().expect("parent")).expect("folder");
        std::fs::write(dir.file(), "not json").expect("written");
        let err = SurfaceSnapshot::new(dir.file())
            .update(false)
            .check(&before())
            .await
            .expect_err("unreadable");
        assert!(matches!(err, SurfaceError::Invalid { .. }), "{err}");
        let outcome = SurfaceSnapshot::new(dir.file())
            .update(true)
            .check(&before())
            .await;
        assert!(matches!(
            outcome,
            Ok(SurfaceOutcome::Written { diff: None, .. })
        ));
    }

    /// `assert_surface` reads the variable; the test process runs without it (unless a
    /// person runs the suite with `PRESA_SURFACE=update`, when these files are written,
    /// in a temporary folder).
    #[tokio::test]
    async fn assert_surface_passes_on_a_compatible_surface_and_panics_on_a_breaking_one() {
        if std::env::var_os(presa::testing::UPDATE_VARIABLE).is_some() {
            return;
        }
        let dir = Dir::new();
        SurfaceSnapshot::new(dir.file())
            .update(true)
            .check(&before())
            .await
            .expect("written");
        presa::testing::assert_surface(&before(), dir.file()).await;
        presa::testing::assert_surface(&additive(), dir.file()).await;
        let file = dir.file();
        let server = breaking();
        let panicked = tokio::spawn(async move {
            presa::testing::assert_surface(&server, file).await;
        })
        .await
        .expect_err("panics");
        assert!(panicked.is_panic());
        let payload = panicked.into_panic();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        assert!(message.contains("maxLength tightened"), "{message}");
        assert!(message.contains("tests/surface.rs"), "{message}");
    }
}

#![deny(warnings)]

use presa::extract::{Args, State};
use presa::{CallToolResult, Content, Json, RequestContext, ToolError};
use serde::{Deserialize, Serialize};

/// No parameters.
#[presa::tool]
async fn nothing() -> String {
    String::new()
}

/// Primitives, options, lists, defaults, renames and descriptions.
#[presa::tool(
    name = "shapes.primitives",
    title = "Primitives",
    annotations(read_only, destructive = false, idempotent, open_world = false, title = "P"),
    icons = ["https://example.com/icon.png"],
    meta = r#"{"com.example/tier": "gold"}"#
)]
pub async fn primitives(
    a: i64,
    #[arg(description = "A flag")] b: bool,
    c: Option<String>,
    d: Vec<u32>,
    #[arg(default = 5)] e: u8,
    #[arg(rename = "fooBar")] foo_bar: f32,
) -> String {
    format!("{a} {b} {c:?} {d:?} {e} {foo_bar}")
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Address {
    street: String,
    city: Option<String>,
}

/// Enums and nested structs.
#[presa::tool]
async fn nested(color: Color, address: Address) -> String {
    let c = match color {
        Color::Red => "red",
        Color::Green => "green",
    };
    format!("{c} {} {:?}", address.street, address.city)
}

/// Headers of every primitive kind.
#[presa::tool]
async fn headers(
    #[header("Region")] region: String,
    #[header("Zone")] zone: Option<String>,
    #[header("Count")] count: i64,
    #[header("Dry-Run")] dry_run: bool,
) -> String {
    format!("{region} {zone:?} {count} {dry_run}")
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
}

/// Structured output.
#[presa::tool]
async fn structured(a: i64, b: i64) -> Json<Sum> {
    Json(Sum { total: a + b })
}

/// Tool errors.
#[presa::tool]
async fn fallible(fail: bool) -> Result<Json<Sum>, ToolError> {
    if fail {
        return Err(ToolError::new("failed"));
    }
    Ok(Json(Sum { total: 1 }))
}

#[derive(Debug)]
struct MyError;

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("my error")
    }
}

/// Any displayable error.
#[presa::tool]
async fn displayable(fail: bool) -> Result<String, MyError> {
    if fail { Err(MyError) } else { Ok("ok".into()) }
}

/// A full result.
#[presa::tool]
async fn full() -> CallToolResult {
    CallToolResult::text("full")
}

/// Content blocks.
#[presa::tool]
async fn blocks() -> Vec<Content> {
    vec![Content::text("a"), Content::text("b")]
}

/// A plain function runs on the blocking pool.
#[presa::tool]
fn blocking(n: u64) -> u64 {
    n * 2
}

struct Db;

/// Injected parameters.
#[presa::tool]
async fn injected(ctx: RequestContext, State(_db): State<Db>, query: String) -> String {
    format!("{} {query}", ctx.method())
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Search {
    query: String,
}

/// All arguments as one struct.
#[presa::tool]
async fn whole(Args(search): Args<Search>) -> String {
    search.query
}

fn main() {
    let server = presa::server!()
        .registered()
        .state(Db)
        .build()
        .expect("the server builds");
    assert_eq!(server.tool_names().len(), 12);
    let _ = presa::server!().add::<nothing>().add::<primitives>();
}

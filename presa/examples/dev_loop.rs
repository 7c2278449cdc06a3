//! The developer's loop: the catalog page while the server is being written, and a
//! surface snapshot that fails a test when a change would break the server's clients.
//! The book's "Developer loop" chapter shows its parts.
//!
//! ```sh
//! cargo run -p presa --example dev_loop   # then open http://127.0.0.1:3000/mcp/dev
//! cargo test -p presa --example dev_loop  # compares with examples/dev_loop.surface.json
//! ```

use presa::{HttpConfig, Server};
use schemars::JsonSchema;
use serde::Deserialize;

/// How a book is lent.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Loan {
    /// Two weeks, renewable.
    Standard,
    /// Two days, for reading in the library.
    Short,
}

/// Lends a book to a reader.
#[presa::tool]
async fn lend(
    #[arg(description = "The book's ISBN")] isbn: String,
    #[arg(description = "The reader's card number")] card: u32,
    loan: Loan,
    #[arg(description = "Whether the reader is told by e-mail when the loan ends")] remind: Option<
        bool,
    >,
) -> String {
    let days = match loan {
        Loan::Standard => 14,
        Loan::Short => 2,
    };
    let reminder = if remind.unwrap_or(true) {
        ", with a reminder"
    } else {
        ""
    };
    format!("{isbn} lent to card {card} for {days} days{reminder}")
}

/// The library's server.
fn server() -> Result<Server, presa::BuildError> {
    presa::server!().add::<lend>().build()
}

// ANCHOR: serve
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    // The page in debug builds only: a release build serves the endpoint alone.
    let config = HttpConfig::default().catalog(cfg!(debug_assertions));
    server()?
        .serve_http_on(listener, config, std::future::pending())
        .await?;
    Ok(())
}
// ANCHOR_END: serve

#[cfg(test)]
mod tests {
    // ANCHOR: snapshot
    /// Fails when a change breaks the surface committed in `dev_loop.surface.json`;
    /// `PRESA_SURFACE=update cargo test` accepts the change and rewrites the file.
    #[tokio::test]
    async fn the_surface_keeps_its_promises() {
        let server = super::server().expect("the server builds");
        presa::testing::assert_surface(&server, "examples/dev_loop.surface.json").await;
    }
    // ANCHOR_END: snapshot
}

//! The fixture's resources and template (wire reference section 16.2), declared with
//! `#[resource]`.

use presa::ServerBuilder;

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<static_text>()
        .add::<static_binary>()
        .add::<template_data>()
}

/// A static text resource.
#[presa::resource(uri = "test://static-text", mime_type = "text/plain")]
async fn static_text() -> &'static str {
    "This is a static text resource for testing."
}

/// A static binary resource.
#[presa::resource(uri = "test://static-binary", mime_type = "application/octet-stream")]
async fn static_binary() -> Vec<u8> {
    vec![0x00, 0x01, 0x02, 0x03, 0x7F, 0x80, 0xFE, 0xFF]
}

/// Data for one id.
#[presa::resource(uri = "test://template/{id}/data", mime_type = "text/plain")]
async fn template_data(id: String) -> String {
    format!("Template resource data for id {id}")
}

//! The fixture's resources and template (wire reference section 16.2).

use presa::{Resource, ResourceRead, ResourceTemplate, ServerBuilder};

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .resource(
            Resource::new("test://static-text", "static_text")
                .description("A static text resource")
                .mime_type("text/plain")
                .handler(|_: ResourceRead| async { "This is a static text resource for testing." }),
        )
        .resource(
            Resource::new("test://static-binary", "static_binary")
                .description("A static binary resource")
                .mime_type("application/octet-stream")
                .handler(|_: ResourceRead| async {
                    vec![0x00u8, 0x01, 0x02, 0x03, 0x7F, 0x80, 0xFE, 0xFF]
                }),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template_data")
                .description("Data for one id")
                .mime_type("text/plain")
                .handler(|read: ResourceRead| async move {
                    let id = read.var("id").unwrap_or_default();
                    format!("Template resource data for id {id}")
                }),
        )
}

//! The fixture's prompts (wire reference section 16.3).

use crate::tools::PNG;
use presa::{
    Completion, Content, GetPromptResult, Prompt, PromptArgument, PromptGet, PromptMessage,
    ResourceContents, ServerBuilder,
};

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(
            Prompt::new("test_simple_prompt")
                .description("A prompt without arguments")
                .handler(|_: PromptGet| async {
                    vec![PromptMessage::user("This is a simple prompt for testing.")]
                }),
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .description("A prompt with two required arguments")
                .argument(
                    PromptArgument::new("arg1")
                        .description("First argument")
                        .required(true),
                )
                .argument(
                    PromptArgument::new("arg2")
                        .description("Second argument")
                        .required(true),
                )
                .handler(|get: PromptGet| async move {
                    let arg1 = get.arg("arg1").unwrap_or_default();
                    let arg2 = get.arg("arg2").unwrap_or_default();
                    vec![PromptMessage::user(format!(
                        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
                    ))]
                })
                .complete("arg1", |req| async move {
                    let options = ["paris", "park", "test", "testing", "value"];
                    let prefix = req.value.to_lowercase();
                    Ok(Completion::new(
                        options.iter().filter(|o| o.starts_with(&prefix)).copied(),
                    ))
                }),
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("A prompt embedding a resource")
                .argument(
                    PromptArgument::new("resourceUri")
                        .description("The URI to embed")
                        .required(true),
                )
                .handler(|get: PromptGet| async move {
                    let uri = get
                        .arg("resourceUri")
                        .unwrap_or("test://example-resource")
                        .to_owned();
                    GetPromptResult::new([
                        PromptMessage::user(Content::resource(
                            ResourceContents::text(uri, "This is embedded resource content.")
                                .mime_type("text/plain"),
                        )),
                        PromptMessage::user("Please process the embedded resource above."),
                    ])
                    .description("Embedded resource prompt")
                }),
        )
        .prompt(
            Prompt::new("test_prompt_with_image")
                .description("A prompt with an image")
                .handler(|_: PromptGet| async {
                    vec![
                        PromptMessage::user(Content::image_base64(PNG, "image/png")),
                        PromptMessage::user("Please analyze the image above."),
                    ]
                }),
        )
}

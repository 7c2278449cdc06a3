"""Prints the fixture's tools, one per line."""

for name in ("test_simple_text", "test_image_content", "test_error_handling"):
    print(name)

//! Text the chat format writes inside its markers: JSON on one line as the templates'
//! `tojson` writes it, with `<|` escaped so no value can spell a control marker, and
//! attribute values with their entities. A leaf: the renderer (`xtml`), the options'
//! tool schemas and the template all use it.
//!
//! Owns: [`json_text`], [`without_markers`], [`escape_attr`], [`unescape_attr`],
//! [`one_line_json`].

/// `value` as the templates' `tojson` writes it: one line ([`one_line_json`]), keys in
/// their order, `<|` as `\u003c|` (a JSON string escape: the same value) so a tool's
/// description or schema can never spell a control marker.
pub fn json_text(value: &serde_json::Value) -> String {
    without_markers(&one_line_json(&value.to_string()))
}

/// JSON text with every `<|` written `\u003c|` (only inside strings can it occur).
pub fn without_markers(json: &str) -> String {
    json.replace("<|", "\\u003c|")
}

/// An attribute value with `&`, `"`, `<` and `>` escaped.
pub fn escape_attr(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape_attr`] (`None` for an unknown or unfinished entity).
pub fn unescape_attr(value: &str) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let (entity, c) = [("&amp;", '&'), ("&quot;", '"'), ("&lt;", '<'), ("&gt;", '>')]
            .into_iter()
            .find(|(e, _)| after.starts_with(e))?;
        out.push(c);
        rest = &after[entity.len()..];
    }
    out.push_str(rest);
    Some(out)
}

/// Valid JSON text on one line as Python's `json.dumps` writes it: no whitespace between
/// tokens but one space after each `,` and `:` (strings untouched, key order kept).
pub fn one_line_json(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 4);
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
            if c == ',' || c == ':' {
                out.push(' ');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_written_on_one_line_as_json_dumps_does_and_strings_keep_their_spaces() {
        assert_eq!(one_line_json("{ \"a, b\" :\n [ \"c \\\" d:\" , 1 ] }"), "{\"a, b\": [\"c \\\" d:\", 1]}");
    }

    #[test]
    fn attributes_escape_and_unescape() {
        let nasty = "a\"b<c>&d";
        assert_eq!(escape_attr(nasty), "a&quot;b&lt;c&gt;&amp;d");
        assert_eq!(unescape_attr(&escape_attr(nasty)).as_deref(), Some(nasty));
        assert_eq!(unescape_attr("a&bogus;"), None);
    }
}

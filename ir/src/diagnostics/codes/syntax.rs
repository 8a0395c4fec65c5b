//! Diagnostic codes of the syntax phase (L0xxx).

super::codes! {
    SYNTAX_ERROR = "L0001" => "syntax error",
    INVALID_UTF8 = "L0002" => "file is not valid UTF-8",
    NESTING_TOO_DEEP = "L0003" => "nesting too deep",
    UNKNOWN_ESCAPE = "L0004" => "unknown escape in string",
    NOT_SPEC_TEXT = "L0005" => "file is not spec text",
}

//! Diagnostic codes of the syntax phase (L0xxx).

super::codes! {
    "L0001" => "syntax error",
    "L0002" => "file is not valid UTF-8",
    "L0003" => "nesting too deep",
    "L0004" => "unknown escape in string",
}

//! Diagnostic codes of the checks that need no catalogue (L1xxx).

super::codes! {
    "L1001" => "unknown block",
    "L1002" => "unknown field",
    "L1003" => "missing block",
    "L1004" => "missing field",
    "L1005" => "duplicate field or block",
    "L1006" => "duplicate job name",
    "L1007" => "wrong kind of value",
    "L1008" => "wrong dimension",
    "L1009" => "unknown keyword",
    "L1010" => "unreadable number",
    "L1011" => "value out of range",
    "L1012" => "model dimensions disagree",
    "L1013" => "stated parameter count disagrees with the dimensions",
    "L1014" => "mixture-of-experts fields",
    "L1015" => "parallel layout is inconsistent",
    "L1016" => "no job in file",
    "L1017" => "block label",
    "L1018" => "invalid checkpoint path",
}

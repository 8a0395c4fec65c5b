//! Diagnostic codes of the checks that need no catalogue (L1xxx).

super::codes! {
    UNKNOWN_BLOCK = "L1001" => "unknown block",
    UNKNOWN_FIELD = "L1002" => "unknown field",
    MISSING_BLOCK = "L1003" => "missing block",
    MISSING_FIELD = "L1004" => "missing field",
    DUPLICATE = "L1005" => "duplicate field or block",
    DUPLICATE_JOB_NAME = "L1006" => "duplicate job name",
    WRONG_KIND = "L1007" => "wrong kind of value",
    WRONG_DIMENSION = "L1008" => "wrong dimension",
    UNKNOWN_KEYWORD = "L1009" => "unknown keyword",
    UNREADABLE_NUMBER = "L1010" => "unreadable number",
    OUT_OF_RANGE = "L1011" => "value out of range",
    MODEL_DIMENSIONS_DISAGREE = "L1012" => "model dimensions disagree",
    PARAMS_DISAGREE = "L1013" => "stated parameter count disagrees with the dimensions",
    MOE_FIELDS = "L1014" => "mixture-of-experts fields",
    INCONSISTENT_LAYOUT = "L1015" => "parallel layout is inconsistent",
    NO_JOB = "L1016" => "no job in file",
    BLOCK_LABEL = "L1017" => "block label",
    INVALID_CHECKPOINT_PATH = "L1018" => "invalid checkpoint path",
    INVALID_JOB_NAME = "L1019" => "invalid job name",
    FROZEN_WEIGHTS = "L1020" => "frozen weights",
}

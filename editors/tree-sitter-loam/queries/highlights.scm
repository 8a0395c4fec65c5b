; Highlighting of loam specs (the capture names nvim-treesitter, Helix and Zed share).

(comment) @comment

; `job "name" {`, `model {`: block kinds read as keywords, labels as strings.
(block
  name: (identifier) @keyword)

(block
  label: (string) @string.special)

; `tokens = 2T`: field names are properties.
(attribute
  name: (identifier) @property)

; Names in values are keywords (`bf16`, `auto`, `true`) or catalogue names (`H100_SXM`).
(attribute
  value: (identifier) @constant)

(list
  (identifier) @constant)

(string) @string

(escape_sequence) @string.escape

(quantity) @number

(money) @number

"=" @operator

"," @punctuation.delimiter

[
  "{"
  "}"
  "["
  "]"
] @punctuation.bracket

; Folding: every block and every list spanning lines.
[
  (block)
  (list)
] @fold

/**
 * @file The loam job-spec language, for tree-sitter: highlighting and folding in editors.
 * @license Apache-2.0
 *
 * It mirrors grammar/loam.pest rule by rule, so both accept the same files (the test suite
 * checks this on every example and fixture): a file holds blocks; a block holds attributes
 * (`name = value`) and nested blocks, optionally with a string label. It knows no field names,
 * as the pest grammar does not: which fields exist is the checker's business.
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

// `80`, `1_024`, `0.5`: digits and `_` separators, an optional fraction (pest's `number`).
const NUMBER = /[0-9][0-9_]*(\.[0-9][0-9_]*)?/;

module.exports = grammar({
  name: 'loam',

  // pest's WHITESPACE (space, tab, CR, LF: no other blank) and COMMENT are silent.
  extras: $ => [/[ \t\r\n]/, $.comment],

  word: $ => $.identifier,

  rules: {
    source_file: $ => repeat($.block),

    block: $ => seq(
      field('name', $.identifier),
      optional(field('label', $.string)),
      '{',
      repeat(choice($.attribute, $.block)),
      '}',
    ),

    attribute: $ => seq(field('name', $.identifier), '=', field('value', $._value)),

    _value: $ => choice($.list, $.string, $.money, $.quantity, $.identifier),

    list: $ => seq(
      '[',
      optional(seq($._value, repeat(seq(',', $._value)), optional(','))),
      ']',
    ),

    // `2.5M CNY`: a number, an optional count suffix, blanks on the same line, a currency code.
    money: _ => token(seq(NUMBER, optional(/[KMBT]/), /[ \t]+/, /[A-Z][A-Z][A-Z]/)),

    // `48TB`, `3.35TB/s`, `80`: the unit is checked against the unit table by the checker.
    quantity: _ => token(seq(NUMBER, optional(/[A-Za-z]+(\/[A-Za-z]+)?/))),

    // Any escape is accepted here and checked when loam lowers the string, as in pest.
    string: $ => seq(
      '"',
      repeat(choice($.string_content, $.escape_sequence)),
      token.immediate('"'),
    ),
    string_content: _ => token.immediate(prec(1, /[^"\\\n]+/)),
    escape_sequence: _ => token.immediate(/\\(.|\n)/),

    identifier: _ => /[A-Za-z_][A-Za-z0-9_-]*/,

    comment: _ => token(seq('#', /[^\n]*/)),
  },
});

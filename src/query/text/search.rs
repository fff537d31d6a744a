//! `$text` queries: the operand (`$search`, `$language`, `$caseSensitive`,
//! `$diacriticSensitive`) with MongoDB's errors; the parse of `$search` into terms (ORed),
//! phrases (`"..."`, each required) and negations (`-term`, `-"phrase"`); whether a document
//! matches (MongoDB's `FTSMatcher`: a positive term, no negated term, every phrase, no
//! negated phrase — case- and diacritic-sensitive when asked); and the text score of a
//! match (the sum of the document's scores of the query's terms).
//!
//! A search is bound to the collection's text index (its fields, weights and languages, and
//! the store table of its entries) before it can match anything: the planner binds it; an
//! unbound search matches nothing.
//!
//! Not for: the index specification or the tokenizer (`mod.rs`, `tokenize.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;

use bson::{Bson, Document};

use super::tokenize::{engine_token, phrase_form, terms, TermOptions, TextLanguage};
use super::TextIndex;
use crate::query::error::QueryError;

/// A `$text` query.
#[derive(Clone, Debug, PartialEq)]
pub struct TextSearch {
    /// `$search` as given.
    pub search: String,
    /// `$language`, when given (else the index's default language).
    pub language: Option<TextLanguage>,
    pub case_sensitive: bool,
    pub diacritic_sensitive: bool,
    bound: Option<BoundSearch>,
}

/// A search bound to its text index.
#[derive(Clone, Debug, PartialEq)]
struct BoundSearch {
    index: Arc<TextIndex>,
    table: String,
    query: ParsedSearch,
}

/// `$search` taken apart (MongoDB's `FTSQueryImpl`).
#[derive(Clone, Debug, Default, PartialEq)]
struct ParsedSearch {
    /// The terms an index scan looks up and the score sums: every positive term and every
    /// term of a positive phrase, case- and diacritic-insensitive.
    bounds_terms: BTreeSet<String>,
    /// Positive terms in the form the matcher compares (sensitive when asked).
    positive_terms: BTreeSet<String>,
    negated_terms: BTreeSet<String>,
    positive_phrases: Vec<String>,
    negated_phrases: Vec<String>,
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> QueryError {
    QueryError::type_mismatch(format!(
        "BSON field '$text.{field}' is the wrong type '{}', expected type '{expected}'",
        crate::query::value::compare::bson_type_name(value)
    ))
}

impl TextSearch {
    /// Parses the operand of `$text`.
    pub fn parse(value: &Bson) -> Result<TextSearch, QueryError> {
        let Bson::Document(operand) = value else {
            return Err(QueryError::bad_value("$text expects an object"));
        };
        let mut search = None;
        let mut language = None;
        let mut case_sensitive = false;
        let mut diacritic_sensitive = false;
        for (field, value) in operand {
            match (field.as_str(), value) {
                ("$search", Bson::String(s)) => search = Some(s.clone()),
                ("$search", other) => return Err(wrong_type(field, other, "string")),
                ("$language", Bson::String(name)) => {
                    language = Some(
                        super::language(
                            name,
                            17262,
                            "unsupported language for text index version 3",
                        )
                        .map_err(|e| match e.code {
                            17262 => QueryError::bad_value(format!(
                                "unsupported language: \"{name}\" for text index version 3"
                            )),
                            _ => e,
                        })?,
                    )
                }
                ("$language", other) => return Err(wrong_type(field, other, "string")),
                ("$caseSensitive", Bson::Boolean(b)) => case_sensitive = *b,
                ("$caseSensitive", other) => return Err(wrong_type(field, other, "bool")),
                ("$diacriticSensitive", Bson::Boolean(b)) => diacritic_sensitive = *b,
                ("$diacriticSensitive", other) => return Err(wrong_type(field, other, "bool")),
                (other, _) => {
                    return Err(QueryError::location(
                        40415,
                        format!("BSON field '$text.{other}' is an unknown field."),
                    ))
                }
            }
        }
        let Some(search) = search else {
            return Err(QueryError::location(
                40414,
                "BSON field '$text.$search' is missing but a required field",
            ));
        };
        Ok(TextSearch {
            search,
            language,
            case_sensitive,
            diacritic_sensitive,
            bound: None,
        })
    }

    /// Binds the search to the collection's text index, whose entries live in `table`.
    pub fn bind(&mut self, index: Arc<TextIndex>, table: &str) {
        let language = self.language.unwrap_or(index.default_language);
        let query = parse_search(&self.search, language, self.options());
        self.bound = Some(BoundSearch {
            index,
            table: table.to_owned(),
            query,
        });
    }

    /// The entries table of the bound index.
    pub fn table(&self) -> Option<&str> {
        self.bound.as_ref().map(|b| b.table.as_str())
    }

    /// The engine tokens of the terms a document must have one of (none: nothing matches).
    pub fn engine_tokens(&self) -> Vec<String> {
        self.bound
            .iter()
            .flat_map(|b| b.query.bounds_terms.iter())
            .map(|term| engine_token(term))
            .collect()
    }

    fn options(&self) -> TermOptions {
        TermOptions {
            case_sensitive: self.case_sensitive,
            diacritic_sensitive: self.diacritic_sensitive,
        }
    }

    /// Whether `document` matches (false while unbound).
    pub fn matches(&self, document: &Document) -> bool {
        let Some(bound) = &self.bound else {
            return false;
        };
        let index = &bound.index;
        let query = &bound.query;
        let language = index
            .document_language(document)
            .unwrap_or(index.default_language);
        let strings = index.strings(document);
        let options = self.options();
        let mut has_positive = false;
        for (_, text) in &strings {
            for term in terms(text, language, options) {
                if query.negated_terms.contains(&term) {
                    return false;
                }
                has_positive |= query.positive_terms.contains(&term);
            }
        }
        if !has_positive {
            return false;
        }
        let forms: Vec<String> = strings
            .iter()
            .map(|(_, text)| phrase_form(text, options))
            .collect();
        let found = |phrase: &String| forms.iter().any(|text| text.contains(phrase.as_str()));
        query.positive_phrases.iter().all(found) && !query.negated_phrases.iter().any(found)
    }

    /// MongoDB's text score of `document` for this search: the sum of the document's scores
    /// of the query's terms (0 while unbound).
    pub fn score(&self, document: &Document) -> f64 {
        let Some(bound) = &self.bound else {
            return 0.0;
        };
        let scores = bound.index.term_scores(document);
        bound
            .query
            .bounds_terms
            .iter()
            .filter_map(|term| scores.get(term))
            .sum()
    }
}

/// MongoDB's parse of `$search`: text runs, `-` (a negation when white space or the start
/// precedes it) and `"` (opening and closing phrases).
fn parse_search(search: &str, language: TextLanguage, options: TermOptions) -> ParsedSearch {
    let mut parsed = ParsedSearch::default();
    let mut in_negation = false;
    let mut in_phrase = false;
    let mut phrase_start = 0;
    let mut previous_white_space = true;
    let mut chars = search.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            previous_white_space = true;
            continue;
        }
        match c {
            '-' => {
                if !in_phrase && previous_white_space {
                    in_negation = true;
                }
            }
            '"' => {
                if in_phrase {
                    let phrase = &search[phrase_start..at];
                    let form = phrase_form(phrase, options);
                    if in_negation {
                        parsed.negated_phrases.push(form);
                    } else {
                        parsed.positive_phrases.push(form);
                    }
                    in_negation = false;
                    in_phrase = false;
                } else {
                    in_phrase = true;
                    if in_negation && previous_white_space {
                        in_negation = false;
                    }
                    phrase_start = at + 1;
                }
            }
            _ => {
                let mut end = at + c.len_utf8();
                while let Some(&(next_at, next)) = chars.peek() {
                    if next.is_whitespace() || next == '-' || next == '"' {
                        break;
                    }
                    end = next_at + next.len_utf8();
                    chars.next();
                }
                let text = &search[at..end];
                if !(in_phrase && in_negation) {
                    add_terms(&mut parsed, text, language, options, in_negation);
                }
                if in_negation && !in_phrase {
                    in_negation = false;
                }
            }
        }
        previous_white_space = false;
    }
    parsed
}

fn add_terms(
    parsed: &mut ParsedSearch,
    text: &str,
    language: TextLanguage,
    options: TermOptions,
    negated: bool,
) {
    let insensitive = terms(text, language, TermOptions::default());
    if !negated {
        parsed.bounds_terms.extend(insensitive.iter().cloned());
    }
    let active = if negated {
        &mut parsed.negated_terms
    } else {
        &mut parsed.positive_terms
    };
    if options == TermOptions::default() {
        active.extend(insensitive);
    } else {
        active.extend(terms(text, language, options));
    }
}

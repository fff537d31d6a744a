//! Text indexes as MongoDB defines them (text index version 3): the specification
//! (`{title: "text", body: "text"}` or `{"$**": "text"}`, `weights`, `default_language`,
//! `language_override`) with MongoDB's validation and its `listIndexes` shape (`key: {_fts:
//! "text", _ftsx: 1}`); the strings of a document an index covers and their terms; MongoDB's
//! term scores; and the entries a document gives the index — its distinct terms as engine
//! tokens (`tokenize::engine_token`) in space-separated chunks, which the store hands to the
//! backend's own full-text engine (SQLite FTS5, PostgreSQL `tsvector` with GIN).
//!
//! `$text` queries (parsing `$search`, matching, the score of a match) are `search.rs`; the
//! tokenizer is `tokenize.rs`.
//!
//! Not for: storing or scanning entries (the store), or planning (the planner).

pub mod search;
pub mod tokenize;

use std::collections::HashMap;

use bson::{Bson, Document};

use crate::query::error::QueryError;
use crate::query::value::number::Number;
use tokenize::{terms, LanguageName, TermOptions, TextLanguage};

pub use search::TextSearch;

/// The reserved field a document carries its text score under between a `$text` read and
/// the projection, sort or pipeline stage that asks for `{$meta: "textScore"}`; removed
/// before any document leaves the core. Its first character cannot start a field a client
/// writes by accident.
pub const TEXT_SCORE_FIELD: &str = "\u{1}textScore";

/// Largest weight MongoDB accepts (exclusive).
const MAX_WEIGHT: f64 = 1_000_000_000.0;
/// The wildcard text field.
const WILDCARD: &str = "$**";
/// Longest chunk of engine tokens in one index entry: PostgreSQL's B-tree entries (the
/// chunk and the `_id` key) must stay under ~2.7 kB.
const CHUNK_BYTES: usize = 1000;

/// A parsed text index specification.
#[derive(Clone, Debug, PartialEq)]
pub struct TextIndex {
    /// Indexed paths and their weights, by path (`$**` for every string field).
    pub weights: Vec<(String, f64)>,
    /// `default_language`.
    pub default_language: TextLanguage,
    /// `language_override`: the document field that names a document's own language.
    pub language_override: String,
}

fn error(code: i32, message: impl Into<String>) -> QueryError {
    QueryError::location(code, message)
}

/// The language a name means, or MongoDB's error for a name it does not know (`code`) and
/// docgate's for one it does not support.
pub fn language(name: &str, code: i32, what: &str) -> Result<TextLanguage, QueryError> {
    match TextLanguage::parse(name) {
        LanguageName::Supported(language) => Ok(language),
        LanguageName::NotSupported => Err(QueryError::not_supported(format!(
            "text search language \"{name}\" is not supported by docgate (english and none are)"
        ))),
        LanguageName::Unknown => Err(error(code, format!("{what}: {name}"))),
    }
}

impl TextIndex {
    /// Whether a key pattern asks for a text index (some field's value is "text").
    pub fn is_text_pattern(key: &Document) -> bool {
        key.values()
            .any(|v| matches!(v, Bson::String(s) if s == "text"))
    }

    /// Parses the text parts of an index specification whose key pattern asks for a text
    /// index; returns the index and the fields `listIndexes` shows after `name` (weights,
    /// default_language, language_override, textIndexVersion).
    pub fn parse(key: &Document, spec: &Document) -> Result<(TextIndex, Document), QueryError> {
        let mut weights: Vec<(String, f64)> = Vec::new();
        for (field, value) in key {
            match value {
                // The form `listIndexes` shows (and the catalog keeps): the fields are in
                // `weights`.
                Bson::String(s) if s == "text" && field == "_fts" => {}
                _ if field == "_ftsx" => {}
                Bson::String(s) if s == "text" => {
                    if field == "_fts" || field == "_ftsx" {
                        return Err(error(
                            17289,
                            "text index with reserved fields _fts/_ftsx not allowed",
                        ));
                    }
                    weights.push((field.clone(), 1.0));
                }
                Bson::String(_) => {
                    return Err(crate::query::index::cannot_create(
                        "Can't use more than one index plugin for a single index.",
                    ))
                }
                _ => {
                    return Err(crate::query::index::cannot_create(
                        "compound text indexes with non-text fields are not supported by \
                         docgate",
                    ))
                }
            }
        }
        match spec.get("weights") {
            None => {}
            Some(Bson::String(s)) if s == WILDCARD => set_weight(&mut weights, WILDCARD, 1.0),
            Some(Bson::Document(given)) => {
                for (field, value) in given {
                    let Some(n) = Number::from_bson(value) else {
                        return Err(error(17283, "weight for text index needs numeric type"));
                    };
                    let weight = n.to_f64();
                    if !(weight > 0.0 && weight < MAX_WEIGHT) {
                        return Err(error(16674, "score for word too high"));
                    }
                    if field != WILDCARD {
                        check_weight_path(field)?;
                    }
                    set_weight(&mut weights, field, weight);
                }
            }
            Some(_) => {
                return Err(error(
                    17284,
                    "text index option 'weights' must be an object",
                ))
            }
        }
        weights.sort_by(|a, b| a.0.cmp(&b.0));
        let default_language = match spec.get("default_language") {
            None => TextLanguage::English,
            Some(Bson::String(name)) => language(name, 17264, "default_language is not valid")
                .map_err(|e| match e.code {
                    17264 => error(17264, "default_language is not valid"),
                    _ => e,
                })?,
            Some(_) => return Err(error(17263, "default_language needs a string type")),
        };
        let language_override = match spec.get("language_override") {
            None => "language".to_string(),
            Some(Bson::String(field))
                if !field.is_empty() && !field.starts_with('$') && !field.contains('.') =>
            {
                field.clone()
            }
            Some(_) => return Err(error(17136, "language_override is not valid")),
        };
        match spec.get("textIndexVersion") {
            None => {}
            Some(v) => match Number::from_bson(v).map(Number::to_f64) {
                Some(3.0) => {}
                Some(n) if n == 1.0 || n == 2.0 => {
                    return Err(crate::query::index::cannot_create(format!(
                        "textIndexVersion {n} is not supported by docgate (3 is)"
                    )))
                }
                Some(n) => return Err(error(17364, format!("bad textIndexVersion: {n}"))),
                None => {
                    return Err(error(
                        17293,
                        "text index option 'textIndexVersion' must be a number",
                    ))
                }
            },
        }
        let mut shown = Document::new();
        let mut weights_doc = Document::new();
        for (field, weight) in &weights {
            weights_doc.insert(field.clone(), weight_value(*weight));
        }
        shown.insert("weights", weights_doc);
        shown.insert("default_language", default_language.name());
        shown.insert("language_override", language_override.clone());
        shown.insert("textIndexVersion", 3);
        let index = TextIndex {
            weights,
            default_language,
            language_override,
        };
        Ok((index, shown))
    }

    /// The language of `document`: its `language_override` field, or the default.
    pub fn document_language(&self, document: &Document) -> Result<TextLanguage, QueryError> {
        match document.get(&self.language_override) {
            None => Ok(self.default_language),
            Some(Bson::String(name)) => match TextLanguage::parse(name) {
                LanguageName::Supported(language) => Ok(language),
                LanguageName::NotSupported => {
                    language(name, 17262, "language override unsupported")
                }
                LanguageName::Unknown => Err(error(
                    17262,
                    format!("language override unsupported: {name}"),
                )),
            },
            Some(_) => Err(error(
                17261,
                "found language override field in document with non-string type",
            )),
        }
    }

    /// The strings of `document` the index covers, each with its field's weight.
    pub fn strings<'a>(&self, document: &'a Document) -> Vec<(f64, &'a str)> {
        let mut out = Vec::new();
        if let Some(wildcard) = self.weight_of(WILDCARD) {
            let language_field = self.language_override.as_str();
            every_string(document, "", language_field, &mut |path, s| {
                out.push((self.weight_of(path).unwrap_or(wildcard), s))
            });
        } else {
            for (path, weight) in &self.weights {
                let parts: Vec<&str> = path.split('.').collect();
                strings_at(document, &parts, &mut |s| out.push((*weight, s)));
            }
        }
        out
    }

    fn weight_of(&self, path: &str) -> Option<f64> {
        self.weights
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, weight)| *weight)
    }

    /// MongoDB's score of each term of `document` (textIndexVersion 3): per string, each
    /// occurrence of a term adds 1/2^k (k: earlier occurrences in that string), times the
    /// field's weight, times (0.5 * occurrences / terms in the string + 0.5), times 1.1 when
    /// the term is the whole string; summed over the strings.
    pub fn term_scores(&self, document: &Document) -> HashMap<String, f64> {
        let language = self
            .document_language(document)
            .unwrap_or(self.default_language);
        let mut scores: HashMap<String, f64> = HashMap::new();
        for (weight, text) in self.strings(document) {
            let terms = terms(text, language, TermOptions::default());
            if terms.is_empty() {
                continue;
            }
            // term -> (frequency with halving, count)
            let mut seen: HashMap<&str, (f64, f64, f64)> = HashMap::new();
            for term in &terms {
                let entry = seen.entry(term.as_str()).or_insert((0.0, 0.0, 0.0));
                entry.2 = if entry.2 == 0.0 { 1.0 } else { entry.2 * 2.0 };
                entry.1 += 1.0;
                entry.0 += 1.0 / entry.2;
            }
            let total = terms.len() as f64;
            for (term, (frequency, count, _)) in seen {
                let coefficient = 0.5 * count / total + 0.5;
                let whole = text.len() == term.len() && text.eq_ignore_ascii_case(term);
                let adjustment = if whole { 1.1 } else { 1.0 };
                *scores.entry(term.to_owned()).or_insert(0.0) +=
                    weight * frequency * coefficient * adjustment;
            }
        }
        scores
    }

    /// The entries `document` gives the index: its distinct terms (in the document's
    /// language) as engine tokens, in space-separated chunks, sorted; none when it has no
    /// term. A `language_override` field naming no supported language is MongoDB's error.
    pub fn entry_keys(&self, document: &Document) -> Result<Vec<Vec<u8>>, QueryError> {
        let language = self.document_language(document)?;
        let mut tokens: Vec<String> = self
            .strings(document)
            .into_iter()
            .flat_map(|(_, text)| terms(text, language, TermOptions::default()))
            .map(|term| tokenize::engine_token(&term))
            .collect();
        tokens.sort();
        tokens.dedup();
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut current = String::new();
        for token in tokens {
            if !current.is_empty() && current.len() + 1 + token.len() > CHUNK_BYTES {
                chunks.push(std::mem::take(&mut current).into_bytes());
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&token);
        }
        if !current.is_empty() {
            chunks.push(current.into_bytes());
        }
        chunks.sort();
        Ok(chunks)
    }
}

fn set_weight(weights: &mut Vec<(String, f64)>, field: &str, weight: f64) {
    match weights.iter_mut().find(|(f, _)| f == field) {
        Some(entry) => entry.1 = weight,
        None => weights.push((field.to_owned(), weight)),
    }
}

fn check_weight_path(field: &str) -> Result<(), QueryError> {
    if field.is_empty() {
        return Err(error(17294, "weight cannot be on an empty field"));
    }
    for part in field.split('.') {
        if part.is_empty() {
            return Err(error(17291, "weight cannot have empty path component"));
        }
        if part.starts_with('$') {
            return Err(error(
                17292,
                "weight cannot have path component with $ prefix",
            ));
        }
    }
    Ok(())
}

/// A weight as MongoDB shows it: an int when whole.
fn weight_value(weight: f64) -> Bson {
    if weight.fract() == 0.0 && weight.abs() < f64::from(i32::MAX) {
        Bson::Int32(weight as i32)
    } else {
        Bson::Double(weight)
    }
}

/// The strings at a dotted path, through arrays (of strings and of documents).
fn strings_at<'a>(document: &'a Document, parts: &[&str], out: &mut impl FnMut(&'a str)) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if let Some(value) = document.get(*first) {
        strings_in(value, rest, out);
    }
}

fn strings_in<'a>(value: &'a Bson, rest: &[&str], out: &mut impl FnMut(&'a str)) {
    match (value, rest.is_empty()) {
        (Bson::String(s), true) => out(s),
        (Bson::Array(items), _) => {
            for item in items {
                match item {
                    Bson::Array(_) => {}
                    other => strings_in(other, rest, out),
                }
            }
        }
        (Bson::Document(inner), false) => strings_at(inner, rest, out),
        _ => {}
    }
}

/// Every string in `document` with its dotted path (array positions left out), but for the
/// fields named `skip` (the language override).
fn every_string<'a>(
    document: &'a Document,
    prefix: &str,
    skip: &str,
    out: &mut impl FnMut(&str, &'a str),
) {
    for (field, value) in document {
        if field == skip {
            continue;
        }
        let path = if prefix.is_empty() {
            field.clone()
        } else {
            format!("{prefix}.{field}")
        };
        every_string_in(value, &path, skip, out);
    }
}

fn every_string_in<'a>(
    value: &'a Bson,
    path: &str,
    skip: &str,
    out: &mut impl FnMut(&str, &'a str),
) {
    match value {
        Bson::String(s) => out(path, s),
        Bson::Document(inner) => every_string(inner, path, skip, out),
        Bson::Array(items) => {
            for item in items {
                every_string_in(item, path, skip, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;

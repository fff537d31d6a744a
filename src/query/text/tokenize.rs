//! MongoDB's text tokenizer (text index version 3): a string becomes terms by splitting at
//! delimiters (white space and punctuation; the apostrophe only outside English), lower
//! casing, dropping the language's stop words, stemming with the language's Snowball
//! stemmer, then removing diacritics. Each step can be switched off the way `$caseSensitive`
//! and `$diacriticSensitive` ask. Also the phrase normalisation (`"..."` matches) and the
//! engine token a term is stored under.
//!
//! Languages: `english` (`en`) and `none` (no stop words, no stemming); any other name
//! MongoDB knows answers an error saying docgate does not support it.
//!
//! Not for: which fields of a document are indexed, scores, or parsing `$search` (`mod.rs`,
//! `search.rs`).

use std::borrow::Cow;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// A text search language docgate supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextLanguage {
    /// Snowball's English stemmer and MongoDB's English stop words.
    English,
    /// No stemming and no stop words.
    Plain,
}

/// Language names MongoDB accepts for text index version 3 that docgate has no stop words
/// for (their stems and stop lists would differ from MongoDB's): refused, not approximated.
const UNSUPPORTED: &str = "danish da dutch nl finnish fi french fr german de hungarian hu \
    italian it norwegian nb portuguese pt romanian ro russian ru spanish es swedish sv \
    turkish tr";

/// MongoDB's English stop words (text index version 3), compared lower-cased, with
/// diacritics kept.
const ENGLISH_STOP_WORDS: &str = "a about above after again against all am an and any are \
    aren't as at be because been before being below between both but by can't cannot could \
    couldn't did didn't do does doesn't doing don't down during each few for from further had \
    hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him \
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me \
    more most mustn't my myself no nor not of off on once only or other ought our ours \
    ourselves out over own same shan't she she'd she'll she's should shouldn't so some such \
    than that that's the their theirs them themselves then there there's these they they'd \
    they'll they're they've this those through to too under until up very was wasn't we we'd \
    we'll we're we've were weren't what what's when when's where where's which while who \
    who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours \
    yourself yourselves";

/// What a language name means: a supported language, one MongoDB knows that docgate does
/// not support, or no language at all.
pub enum LanguageName {
    Supported(TextLanguage),
    NotSupported,
    Unknown,
}

impl TextLanguage {
    /// Reads a language name as MongoDB spells them (full names and ISO 639-1 codes).
    pub fn parse(name: &str) -> LanguageName {
        match name {
            "english" | "en" => LanguageName::Supported(TextLanguage::English),
            "none" => LanguageName::Supported(TextLanguage::Plain),
            other if UNSUPPORTED.split_whitespace().any(|n| n == other) => {
                LanguageName::NotSupported
            }
            _ => LanguageName::Unknown,
        }
    }

    /// The name MongoDB shows for the language.
    pub fn name(self) -> &'static str {
        match self {
            TextLanguage::English => "english",
            TextLanguage::Plain => "none",
        }
    }

    fn is_stop_word(self, lowered: &str) -> bool {
        static ENGLISH: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
        match self {
            TextLanguage::English => ENGLISH
                .get_or_init(|| ENGLISH_STOP_WORDS.split_whitespace().collect())
                .contains(lowered),
            TextLanguage::Plain => false,
        }
    }

    fn stem(self, word: &str) -> Cow<'_, str> {
        static ENGLISH: OnceLock<Stemmer> = OnceLock::new();
        match self {
            TextLanguage::English => Cow::Owned(
                ENGLISH
                    .get_or_init(|| Stemmer::create(Algorithm::English))
                    .stem(word)
                    .into_owned(),
            ),
            TextLanguage::Plain => Cow::Borrowed(word),
        }
    }
}

/// How terms are made: MongoDB's default (case- and diacritic-insensitive, stop words
/// dropped) or the sensitive forms `$caseSensitive` / `$diacriticSensitive` compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TermOptions {
    pub case_sensitive: bool,
    pub diacritic_sensitive: bool,
}

/// Whether `c` separates terms (white space, dashes, quotation marks, punctuation and the
/// ASCII symbols; the apostrophe only outside English, so "don't" stays one English word).
fn is_delimiter(c: char, language: TextLanguage) -> bool {
    if c == '\'' {
        return language != TextLanguage::English;
    }
    if c == '_' {
        return false;
    }
    c.is_whitespace()
        || c.is_ascii_punctuation()
        || matches!(
            c as u32,
            0xA1..=0xA7 | 0xA9 | 0xAB | 0xAC | 0xAE | 0xB0 | 0xB1 | 0xB6 | 0xB7 | 0xBB | 0xBF
                | 0xD7 | 0xF7 | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003
                | 0x3008..=0x3011 | 0x3014..=0x301F | 0xFF01..=0xFF0F
        )
}

/// The words of `text` (runs of non-delimiters), in order.
pub fn words(text: &str, language: TextLanguage) -> impl Iterator<Item = &str> {
    text.split(move |c| is_delimiter(c, language))
        .filter(|w| !w.is_empty())
}

/// The terms of `text` in order (a term may repeat): stop words dropped, stemmed, folded as
/// `options` say.
pub fn terms(text: &str, language: TextLanguage, options: TermOptions) -> Vec<String> {
    let mut out = Vec::new();
    for word in words(text, language) {
        let lowered = word.to_lowercase();
        if language.is_stop_word(&lowered) {
            continue;
        }
        let source = if options.case_sensitive {
            word
        } else {
            &lowered
        };
        let stemmed = language.stem(source);
        out.push(if options.diacritic_sensitive {
            stemmed.into_owned()
        } else {
            strip_diacritics(&stemmed)
        });
    }
    out
}

/// `text` without combining marks (decomposed, marks dropped, recomposed).
pub fn strip_diacritics(text: &str) -> String {
    if text.is_ascii() {
        return text.to_owned();
    }
    let decomposed = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize(text);
    let kept: String = decomposed.chars().filter(|c| !is_combining(*c)).collect();
    icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
        .normalize(&kept)
        .into_owned()
}

fn is_combining(c: char) -> bool {
    matches!(
        c as u32,
        0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F
    )
}

/// A string as a phrase compares it: lower-cased unless case-sensitive, diacritics removed
/// unless diacritic-sensitive.
pub fn phrase_form(text: &str, options: TermOptions) -> String {
    let cased = if options.case_sensitive {
        text.to_owned()
    } else {
        text.to_lowercase()
    };
    if options.diacritic_sensitive {
        cased
    } else {
        strip_diacritics(&cased)
    }
}

/// Longest term stored spelled out (hex); longer ones are stored as a hash of it.
const SPELLED_TERM_BYTES: usize = 48;

/// The token a term is stored and searched under in the backend's full-text engine: `t` and
/// the term's UTF-8 in hex, or `h` and a SHA-256 prefix of a long term. Such tokens are
/// one word to every engine tokenizer (ASCII letters and digits), so the engine matches
/// exactly docgate's terms — never a word split differently — and the document is re-checked
/// in Rust anyway (a hash collision only over-selects).
pub fn engine_token(term: &str) -> String {
    use sha2::Digest;
    let bytes = term.as_bytes();
    if bytes.len() <= SPELLED_TERM_BYTES {
        let mut out = String::with_capacity(1 + bytes.len() * 2);
        out.push('t');
        out.push_str(&hex(bytes));
        out
    } else {
        let digest = sha2::Sha256::digest(bytes);
        format!("h{}", hex(&digest[..16]))
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_terms_are_stemmed_lowered_and_without_stop_words() {
        let t = terms(
            "The Quick brown foxes were running, don't they?",
            TextLanguage::English,
            TermOptions::default(),
        );
        assert_eq!(t, vec!["quick", "brown", "fox", "run"]);
    }

    #[test]
    fn none_keeps_stop_words_and_does_not_stem() {
        let t = terms("the running", TextLanguage::Plain, TermOptions::default());
        assert_eq!(t, vec!["the", "running"]);
    }

    #[test]
    fn diacritics_are_removed_unless_asked() {
        let insensitive = terms("Café résumé", TextLanguage::Plain, TermOptions::default());
        assert_eq!(insensitive, vec!["cafe", "resume"]);
        let sensitive = TermOptions {
            case_sensitive: true,
            diacritic_sensitive: true,
        };
        assert_eq!(
            terms("Café", TextLanguage::Plain, sensitive),
            vec!["Café".to_string()]
        );
    }

    #[test]
    fn engine_tokens_are_ascii_words() {
        assert_eq!(engine_token("ab"), "t6162");
        let long = "x".repeat(100);
        assert!(engine_token(&long).starts_with('h'));
        assert_eq!(engine_token(&long).len(), 33);
    }
}

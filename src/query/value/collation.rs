//! MongoDB collations: the `collation` document parsed and validated into a [`Collation`]
//! (`simple` is none: strings compare by their bytes), backed by an ICU4X collator built once
//! per distinct specification and cached; comparing two strings and the collator's sort key
//! (whose byte order is the comparison's). While a command evaluates under a collation the
//! collator is installed on the evaluating thread ([`install`]), and MongoDB's value order
//! (`value/compare.rs`) compares strings with it — filters, sorts, `distinct`, `$group` keys
//! and expression comparisons all go through that one order.
//!
//! `backwards` (French secondary order) is set in the locale data the collator is built
//! from (`collation_data.rs`: ICU4X has no option for it). Locale variants
//! (`de@collation=phonebook`) are MongoDB's list, built as ICU4X collation types
//! (`de-u-co-phonebk`) where ICU4X's compiled data has them and refused where it does not
//! (every `search` variant, `searchjl`, `phonetic`, `big5han`, `gb2312han`).
//!
//! Not for: deciding what SQL may evaluate under a collation (`query::planner`) or where a
//! command's collation comes from (the commands and the catalog's collection default).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bson::{Bson, Document};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{Collator as IcuCollator, CollatorPreferences};
use icu_locale_core::Locale;

use super::collation_data::{has_collation_type, CollationDataProvider};
use crate::query::error::QueryError;

/// The ICU version MongoDB reports in a collation's `version` (it has not changed since
/// collations appeared); echoed so that specifications round-trip between servers.
pub const COLLATION_VERSION: &str = "57.1";

/// The locales MongoDB's manual lists as supported ("Collation Locales and Default
/// Parameters"); any other answers MongoDB's invalid-locale error.
const SUPPORTED_LOCALES: &[&str] = &[
    "af",
    "sq",
    "am",
    "ar",
    "hy",
    "as",
    "az",
    "bn",
    "be",
    "bs",
    "bs_Cyrl",
    "bg",
    "my",
    "ca",
    "chr",
    "zh",
    "zh_Hant",
    "hr",
    "cs",
    "da",
    "nl",
    "dz",
    "en",
    "en_US",
    "en_US_POSIX",
    "eo",
    "et",
    "ee",
    "fo",
    "fil",
    "fi",
    "fi_FI",
    "fr",
    "fr_CA",
    "gl",
    "ka",
    "de",
    "de_AT",
    "el",
    "gu",
    "ha",
    "haw",
    "he",
    "hi",
    "hu",
    "is",
    "ig",
    "smn",
    "id",
    "ga",
    "it",
    "ja",
    "kl",
    "kn",
    "kk",
    "km",
    "kok",
    "ko",
    "ky",
    "lkt",
    "ln",
    "lo",
    "lv",
    "li",
    "lt",
    "dsb",
    "lb",
    "mk",
    "ms",
    "ml",
    "mt",
    "mr",
    "mn",
    "ne",
    "se",
    "nb",
    "nn",
    "or",
    "om",
    "ps",
    "fa",
    "fa_AF",
    "pl",
    "pt",
    "pa",
    "ro",
    "ru",
    "sr",
    "sr_Latn",
    "si",
    "sk",
    "sl",
    "es",
    "sw",
    "sv",
    "ta",
    "te",
    "th",
    "bo",
    "to",
    "tr",
    "uk",
    "hsb",
    "ur",
    "ug",
    "vi",
    "wae",
    "cy",
    "yi",
    "yo",
    "zu",
];

/// MongoDB's locale variants (`<locale>@collation=<variant>`, the manual's table), each
/// with the BCP-47 collation type (`-u-co-…`) ICU4X knows it by. A variant is honoured when
/// ICU4X's compiled data has that type for the locale, else refused (2 BadValue).
const VARIANTS: &[(&str, &str, &str)] = &[
    ("ar", "compat", "compat"),
    ("az", "search", "search"),
    ("bn", "traditional", "trad"),
    ("bs", "search", "search"),
    ("ca", "search", "search"),
    ("zh", "big5han", "big5han"),
    ("zh", "gb2312han", "gb2312"),
    ("zh", "unihan", "unihan"),
    ("zh", "zhuyin", "zhuyin"),
    ("hr", "search", "search"),
    ("cs", "search", "search"),
    ("da", "search", "search"),
    ("fi", "search", "search"),
    ("fi", "traditional", "trad"),
    ("gl", "search", "search"),
    ("de", "search", "search"),
    ("de", "eor", "eor"),
    ("de", "phonebook", "phonebk"),
    ("de_AT", "phonebook", "phonebk"),
    ("he", "search", "search"),
    ("is", "search", "search"),
    ("smn", "search", "search"),
    ("ja", "unihan", "unihan"),
    ("kl", "search", "search"),
    ("kn", "traditional", "trad"),
    ("ko", "search", "search"),
    ("ko", "searchjl", "searchjl"),
    ("ko", "unihan", "unihan"),
    ("ln", "phonetic", "phonetic"),
    ("se", "search", "search"),
    ("nb", "search", "search"),
    ("nn", "search", "search"),
    ("sr_Latn", "search", "search"),
    ("si", "dictionary", "dict"),
    ("sk", "search", "search"),
    ("es", "search", "search"),
    ("es", "traditional", "trad"),
    ("sv", "search", "search"),
    ("tr", "search", "search"),
    ("vi", "traditional", "trad"),
    ("yi", "search", "search"),
];

/// The locale whose collation compares French accents from the back of the string by
/// default.
const BACKWARDS_LOCALE: &str = "fr_CA";

/// `caseFirst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaseFirst {
    Upper,
    Lower,
    Off,
}

/// A validated collation specification with every field resolved (the locale's defaults
/// filled in): what `listCollections` and `listIndexes` echo, and the cache key of its
/// collator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CollationSpec {
    /// As given (`de@collation=phonebook` with its variant).
    pub locale: String,
    /// The ICU4X collation type of the locale's variant (`phonebk`), if it has one.
    pub collation_type: Option<&'static str>,
    pub case_level: bool,
    pub case_first: CaseFirst,
    /// 1 (primary) to 5 (identical).
    pub strength: u8,
    pub numeric_ordering: bool,
    /// `alternate: "shifted"` (whitespace and punctuation ignorable).
    pub shifted: bool,
    /// `maxVariable: "space"` (else "punct").
    pub max_variable_space: bool,
    pub normalization: bool,
    pub backwards: bool,
}

/// A collator for one specification.
pub struct Collator {
    spec: CollationSpec,
    icu: IcuCollator,
}

impl std::fmt::Debug for Collator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collator")
            .field("spec", &self.spec)
            .finish()
    }
}

impl PartialEq for Collator {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Collator {
    /// The resolved specification.
    pub fn spec(&self) -> &CollationSpec {
        &self.spec
    }

    /// The order of two strings under this collation.
    pub fn compare(&self, a: &str, b: &str) -> Ordering {
        self.icu.as_borrowed().compare(a, b)
    }

    /// The collator's sort key of `s`: comparing two keys bytewise gives [`Collator::compare`].
    pub fn sort_key(&self, s: &str) -> Vec<u8> {
        let mut key = Vec::new();
        let Ok(()) = self.icu.as_borrowed().write_sort_key_to(s, &mut key);
        key
    }
}

/// A command's collation: `None` is MongoDB's `simple` (byte order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collation(Option<Arc<Collator>>);

impl Collation {
    /// The simple collation.
    pub fn simple() -> Collation {
        Collation(None)
    }

    /// Parses and validates a collation document (`{locale: "simple"}` is the simple one).
    pub fn parse(document: &Document) -> Result<Collation, QueryError> {
        match parse_spec(document)? {
            None => Ok(Collation::simple()),
            Some(spec) => Ok(Collation(Some(collator_for(spec)?))),
        }
    }

    /// Whether strings compare by their bytes.
    pub fn is_simple(&self) -> bool {
        self.0.is_none()
    }

    /// The collator, unless simple.
    pub fn collator(&self) -> Option<&Arc<Collator>> {
        self.0.as_ref()
    }

    /// The full specification as MongoDB echoes it (every field, and `version`); none for
    /// the simple collation.
    pub fn to_document(&self) -> Option<Document> {
        self.0
            .as_ref()
            .map(|collator| spec_document(&collator.spec))
    }

    /// The collation installed on the current thread (simple when none is).
    pub fn installed() -> Collation {
        Collation(ACTIVE.with(|active| active.borrow().clone()))
    }

    /// Runs `work` with this collation installed on the current thread (see [`install`]).
    pub fn install<R>(&self, work: impl FnOnce() -> R) -> R {
        install(self.0.clone(), work)
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Arc<Collator>>> = const { RefCell::new(None) };
}

/// Runs `work` with `collator` as the thread's collation: string comparisons in the value
/// order use it until `work` returns; the previous one is put back after (also on panic).
pub fn install<R>(collator: Option<Arc<Collator>>, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Collator>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ACTIVE.with(|active| *active.borrow_mut() = previous);
        }
    }
    let previous = ACTIVE.with(|active| active.replace(collator));
    let _restore = Restore(previous);
    work()
}

/// Whether a non-simple collation is installed on this thread (see [`install`]).
pub fn is_installed() -> bool {
    ACTIVE.with(|active| active.borrow().is_some())
}

/// The order of two strings under the installed collation (bytes when none is).
pub fn compare_strings(a: &str, b: &str) -> Ordering {
    ACTIVE.with(|active| match &*active.borrow() {
        Some(collator) => collator.compare(a, b),
        None => a.as_bytes().cmp(b.as_bytes()),
    })
}

/// `value` with every string (also inside documents and arrays) replaced by a string image
/// of its sort key under the installed collation, so that byte equality of the images is
/// equality under the collation (hashing sets, `$group` keys). Unchanged when none is
/// installed.
pub fn equality_image(value: &Bson) -> std::borrow::Cow<'_, Bson> {
    ACTIVE.with(|active| match &*active.borrow() {
        None => std::borrow::Cow::Borrowed(value),
        Some(collator) => std::borrow::Cow::Owned(image_under(collator, value)),
    })
}

fn image_under(collator: &Collator, value: &Bson) -> Bson {
    match value {
        Bson::String(s) => Bson::String(hex(&collator.sort_key(s))),
        Bson::Symbol(s) => Bson::Symbol(hex(&collator.sort_key(s))),
        Bson::Document(d) => Bson::Document(
            d.iter()
                .map(|(k, v)| (k.clone(), image_under(collator, v)))
                .collect(),
        ),
        Bson::Array(items) => Bson::Array(items.iter().map(|v| image_under(collator, v)).collect()),
        other => other.clone(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The built collators by specification: building one loads and merges locale data.
fn collator_for(spec: CollationSpec) -> Result<Arc<Collator>, QueryError> {
    static CACHE: OnceLock<Mutex<HashMap<CollationSpec, Arc<Collator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = match cache.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(found) = cache.get(&spec) {
        return Ok(found.clone());
    }
    let collator = Arc::new(build(spec.clone())?);
    cache.insert(spec, collator.clone());
    Ok(collator)
}

fn build(spec: CollationSpec) -> Result<Collator, QueryError> {
    let (base, _) = split_variant(&spec.locale);
    // A variant is the locale's `-u-co-` keyword (`de-u-co-phonebk`).
    let with_type = match spec.collation_type {
        Some(kind) => format!("{base}-u-co-{kind}"),
        None => base.to_string(),
    };
    let locale = icu_locale(&with_type).ok_or_else(|| invalid_locale(&spec.locale))?;
    let mut preferences = CollatorPreferences::from(&locale);
    preferences.numeric_ordering = Some(if spec.numeric_ordering {
        CollationNumericOrdering::True
    } else {
        CollationNumericOrdering::False
    });
    preferences.case_first = Some(match spec.case_first {
        CaseFirst::Upper => CollationCaseFirst::Upper,
        CaseFirst::Lower => CollationCaseFirst::Lower,
        CaseFirst::Off => CollationCaseFirst::False,
    });
    let mut options = CollatorOptions::default();
    options.strength = Some(match spec.strength {
        1 => Strength::Primary,
        2 => Strength::Secondary,
        3 => Strength::Tertiary,
        4 => Strength::Quaternary,
        _ => Strength::Identical,
    });
    options.case_level = Some(if spec.case_level {
        CaseLevel::On
    } else {
        CaseLevel::Off
    });
    options.alternate_handling = Some(if spec.shifted {
        AlternateHandling::Shifted
    } else {
        AlternateHandling::NonIgnorable
    });
    options.max_variable = Some(if spec.max_variable_space {
        MaxVariable::Space
    } else {
        MaxVariable::Punctuation
    });
    let data = CollationDataProvider {
        backwards: spec.backwards,
    };
    let icu = IcuCollator::try_new_unstable(&data, preferences, options)
        .map_err(|error| QueryError::bad_value(format!("cannot build the collator: {error}")))?;
    Ok(Collator { spec, icu })
}

fn spec_document(spec: &CollationSpec) -> Document {
    let mut d = Document::new();
    d.insert("locale", spec.locale.clone());
    d.insert("caseLevel", spec.case_level);
    d.insert(
        "caseFirst",
        match spec.case_first {
            CaseFirst::Upper => "upper",
            CaseFirst::Lower => "lower",
            CaseFirst::Off => "off",
        },
    );
    d.insert("strength", i32::from(spec.strength));
    d.insert("numericOrdering", spec.numeric_ordering);
    d.insert(
        "alternate",
        if spec.shifted {
            "shifted"
        } else {
            "non-ignorable"
        },
    );
    d.insert(
        "maxVariable",
        if spec.max_variable_space {
            "space"
        } else {
            "punct"
        },
    );
    d.insert("normalization", spec.normalization);
    d.insert("backwards", spec.backwards);
    d.insert("version", COLLATION_VERSION);
    d
}

/// Validates the document as MongoDB's collation parser does; `None` for `simple`.
fn parse_spec(document: &Document) -> Result<Option<CollationSpec>, QueryError> {
    let locale = match document.get("locale") {
        None => {
            return Err(QueryError::location(
                40414,
                "BSON field 'collation.locale' is missing but a required field",
            ))
        }
        Some(Bson::String(locale)) => locale.clone(),
        Some(other) => return Err(wrong_type("locale", "string", other)),
    };
    let (base, _) = split_variant(&locale);
    let mut spec = CollationSpec {
        locale: locale.clone(),
        collation_type: None,
        case_level: false,
        case_first: default_case_first(base),
        strength: 3,
        numeric_ordering: false,
        shifted: base == "th",
        max_variable_space: false,
        normalization: false,
        backwards: base == BACKWARDS_LOCALE,
    };
    for (key, value) in document {
        match key.as_str() {
            "locale" => {}
            "caseLevel" => spec.case_level = boolean(key, value)?,
            "numericOrdering" => spec.numeric_ordering = boolean(key, value)?,
            "normalization" => spec.normalization = boolean(key, value)?,
            "backwards" => spec.backwards = boolean(key, value)?,
            "strength" => spec.strength = strength(value)?,
            "caseFirst" => {
                spec.case_first = match enumeration(key, value)? {
                    "upper" => CaseFirst::Upper,
                    "lower" => CaseFirst::Lower,
                    "off" => CaseFirst::Off,
                    other => return Err(bad_enumeration(key, other)),
                }
            }
            "alternate" => {
                spec.shifted = match enumeration(key, value)? {
                    "shifted" => true,
                    "non-ignorable" => false,
                    other => return Err(bad_enumeration(key, other)),
                }
            }
            "maxVariable" => {
                spec.max_variable_space = match enumeration(key, value)? {
                    "space" => true,
                    "punct" => false,
                    other => return Err(bad_enumeration(key, other)),
                }
            }
            "version" => match value {
                Bson::String(v) if v == COLLATION_VERSION => {}
                Bson::String(v) => {
                    return Err(QueryError::bad_value(format!(
                        "Field 'version' is invalid in: {}: collation version '{v}' is not \
                         '{COLLATION_VERSION}'",
                        format_document(document)
                    )))
                }
                other => return Err(wrong_type(key, "string", other)),
            },
            other => {
                return Err(QueryError::location(
                    40415,
                    format!("BSON field 'collation.{other}' is an unknown field."),
                ))
            }
        }
    }
    if locale == "simple" {
        if document.len() > 1 {
            return Err(QueryError::bad_value(format!(
                "Collation with locale 'simple' cannot have other fields: {}",
                format_document(document)
            )));
        }
        return Ok(None);
    }
    let (base, variant) = split_variant(&locale);
    if !SUPPORTED_LOCALES.contains(&base) {
        return Err(invalid_locale_in(document));
    }
    if let Some(variant) = variant {
        spec.collation_type = Some(collation_type(document, base, variant)?);
    }
    Ok(Some(spec))
}

/// A locale and its variant: `de@collation=phonebook` is `("de", Some("collation=phonebook"))`.
fn split_variant(locale: &str) -> (&str, Option<&str>) {
    match locale.split_once('@') {
        Some((base, keywords)) => (base, Some(keywords)),
        None => (locale, None),
    }
}

/// The ICU4X locale of a MongoDB (ICU) locale ID without variant: `en_US_POSIX` is
/// `en-US-posix`.
fn icu_locale(base: &str) -> Option<Locale> {
    base.replace('_', "-")
        .replace("-POSIX", "-posix")
        .parse()
        .ok()
}

/// The ICU4X collation type of `base`'s variant (`keywords`: what follows the `@`). Not one
/// of MongoDB's variants of that locale: MongoDB's (ICU's) invalid-locale error, which names
/// the locale ICU would have used. One of them that ICU4X's compiled data lacks (`search`):
/// 2 BadValue saying so.
fn collation_type(
    document: &Document,
    base: &str,
    keywords: &str,
) -> Result<&'static str, QueryError> {
    let found = keywords.strip_prefix("collation=").and_then(|variant| {
        VARIANTS
            .iter()
            .find(|(locale, name, _)| *locale == base && *name == variant)
    });
    let Some((_, variant, kind)) = found else {
        return Err(QueryError::bad_value(format!(
            "Field 'locale' is invalid in: {}. Did you mean '{base}'?",
            format_document(document)
        )));
    };
    match icu_locale(base) {
        Some(locale) if has_collation_type(&locale, kind) => Ok(kind),
        _ => Err(QueryError::bad_value(format!(
            "Field 'locale' is invalid in: {}: docgate's collator (ICU4X) has no data for the \
             '{variant}' collation of '{base}'",
            format_document(document)
        ))),
    }
}

/// The locales whose `caseFirst` defaults to "upper" (MongoDB's "Collation Default
/// Parameters"; CLDR's tailorings of Danish and Maltese); "off" elsewhere. Thai alone
/// defaults `alternate` to "shifted".
fn default_case_first(locale: &str) -> CaseFirst {
    match locale {
        "da" | "mt" => CaseFirst::Upper,
        _ => CaseFirst::Off,
    }
}

fn boolean(field: &str, value: &Bson) -> Result<bool, QueryError> {
    match value {
        Bson::Boolean(b) => Ok(*b),
        other => Err(wrong_type(field, "bool", other)),
    }
}

fn enumeration<'a>(field: &str, value: &'a Bson) -> Result<&'a str, QueryError> {
    match value {
        Bson::String(s) => Ok(s),
        other => Err(wrong_type(field, "string", other)),
    }
}

fn strength(value: &Bson) -> Result<u8, QueryError> {
    let number = crate::query::value::number::Number::from_bson(value)
        .ok_or_else(|| wrong_type("strength", "int", value))?;
    let Some(whole) = number.to_exact_i64() else {
        return Err(QueryError::bad_value(format!(
            "BSON field 'collation.strength' must be an integer, actual value '{value}'"
        )));
    };
    if whole < 1 {
        return Err(QueryError::location(
            51024,
            format!("BSON field 'strength' value must be >= 1, actual value '{whole}'"),
        ));
    }
    if whole > 5 {
        return Err(QueryError::location(
            51024,
            format!("BSON field 'strength' value must be <= 5, actual value '{whole}'"),
        ));
    }
    Ok(whole as u8)
}

fn wrong_type(field: &str, expected: &str, value: &Bson) -> QueryError {
    QueryError::type_mismatch(format!(
        "BSON field 'collation.{field}' is the wrong type '{}', expected type '{expected}'",
        crate::query::value::compare::bson_type_name(value)
    ))
}

fn bad_enumeration(field: &str, value: &str) -> QueryError {
    QueryError::bad_value(format!(
        "Enumeration value '{value}' for field 'collation.{field}' is not a valid value."
    ))
}

fn invalid_locale(locale: &str) -> QueryError {
    let mut d = Document::new();
    d.insert("locale", locale);
    invalid_locale_in(&d)
}

fn invalid_locale_in(document: &Document) -> QueryError {
    QueryError::bad_value(format!(
        "Field 'locale' is invalid in: {}",
        format_document(document)
    ))
}

/// A collation document as MongoDB's messages print it: `{ locale: "xx", strength: 2 }`.
fn format_document(document: &Document) -> String {
    let fields: Vec<String> = document
        .iter()
        .map(|(k, v)| match v {
            Bson::String(s) => format!("{k}: \"{s}\""),
            other => format!("{k}: {other}"),
        })
        .collect();
    if fields.is_empty() {
        "{}".into()
    } else {
        format!("{{ {} }}", fields.join(", "))
    }
}

#[cfg(test)]
#[path = "collation_tests.rs"]
mod tests;

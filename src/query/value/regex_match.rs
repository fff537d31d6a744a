//! MongoDB regular expressions (`$regex`, `/…/flags` values, regexes inside `$in`) compiled
//! with the `regex` crate: option letters i, m, s, x (u accepted) become inline flags.
//!
//! Not for: PCRE features the `regex` crate lacks (look-around, back-references): such
//! patterns are rejected with BadValue rather than matched approximately.

use crate::query::error::QueryError;
use bson::Bson;

/// A compiled regular expression with the pattern and options it came from.
#[derive(Clone, Debug)]
pub struct RegexPredicate {
    /// The pattern as given.
    pub pattern: String,
    /// The option letters as given.
    pub options: String,
    compiled: regex::Regex,
}

impl PartialEq for RegexPredicate {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern && self.options == other.options
    }
}

impl RegexPredicate {
    /// Compiles `pattern` with MongoDB option letters.
    pub fn new(pattern: &str, options: &str) -> Result<RegexPredicate, QueryError> {
        let mut flags = String::new();
        for letter in options.chars() {
            match letter {
                'i' | 'm' | 's' | 'x' => {
                    if !flags.contains(letter) {
                        flags.push(letter);
                    }
                }
                'u' | 'l' => {}
                other => {
                    return Err(QueryError::location(
                        51108,
                        format!("invalid flag in regex options: {other}"),
                    ))
                }
            }
        }
        let source = if flags.is_empty() {
            pattern.to_string()
        } else {
            format!("(?{flags}){pattern}")
        };
        let compiled = regex::RegexBuilder::new(&source)
            .size_limit(1 << 22)
            .build()
            .map_err(|e| {
                QueryError::location(
                    51091,
                    format!(
                        "Regular expression is invalid: {}",
                        first_line(&e.to_string())
                    ),
                )
            })?;
        Ok(RegexPredicate {
            pattern: pattern.to_string(),
            options: options.to_string(),
            compiled,
        })
    }

    /// The compiled expression, for callers that need the matches and captures themselves
    /// (`$regexFind`, `$regexFindAll`).
    pub fn compiled(&self) -> &regex::Regex {
        &self.compiled
    }

    /// Whether a string matches (unanchored search, like PCRE).
    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text)
    }

    /// Whether a BSON value matches: strings and symbols by search, regex values by identity.
    pub fn matches_value(&self, value: &Bson) -> bool {
        match value {
            Bson::String(s) | Bson::Symbol(s) => self.is_match(s),
            Bson::RegularExpression(re) => {
                re.pattern.as_str() == self.pattern && re.options.as_str() == self.options
            }
            _ => false,
        }
    }
}

thread_local! {
    /// Regexes compiled for `$in` lists and other places that hold only the BSON value.
    static COMPILED: std::cell::RefCell<std::collections::HashMap<(String, String), RegexPredicate>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Whether `value` matches the BSON regex `re`, compiling it once per thread (bounded cache).
/// An invalid pattern matches nothing (parsing already rejected it where it came from a query).
pub fn bson_regex_matches(re: &bson::Regex, value: &Bson) -> bool {
    let key = (
        re.pattern.as_str().to_string(),
        re.options.as_str().to_string(),
    );
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if !cache.contains_key(&key) {
            let Ok(compiled) = RegexPredicate::new(&key.0, &key.1) else {
                return false;
            };
            if cache.len() >= 256 {
                cache.clear();
            }
            cache.insert(key.clone(), compiled);
        }
        cache
            .get(&key)
            .is_some_and(|compiled| compiled.matches_value(value))
    })
}

fn first_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_flags() {
        let re = RegexPredicate::new("^ab", "i").unwrap();
        assert!(re.is_match("ABc"));
        assert!(!re.is_match("cab"));
        let re = RegexPredicate::new("^b", "m").unwrap();
        assert!(re.is_match("a\nb"));
        let re = RegexPredicate::new("a b # comment", "x").unwrap();
        assert!(re.is_match("ab"));
        let re = RegexPredicate::new("a.b", "s").unwrap();
        assert!(re.is_match("a\nb"));
    }

    #[test]
    fn bad_patterns_and_flags_are_errors() {
        assert_eq!(RegexPredicate::new("(", "").unwrap_err().code, 51091);
        assert_eq!(RegexPredicate::new("a", "z").unwrap_err().code, 51108);
    }
}

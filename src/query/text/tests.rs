//! Unit tests of text index specifications, entries, `$search` parsing, matching and
//! scores, with expectations from MongoDB's manual.

use std::sync::Arc;

use bson::{doc, Bson};

use super::{TextIndex, TextSearch};
use crate::query::index::IndexSpec;

fn index(spec: bson::Document) -> Arc<TextIndex> {
    let parsed = IndexSpec::parse(&spec).unwrap();
    parsed.text.unwrap()
}

fn search(index: &Arc<TextIndex>, operand: bson::Document) -> TextSearch {
    let mut search = TextSearch::parse(&Bson::Document(operand)).unwrap();
    search.bind(index.clone(), "t");
    search
}

#[test]
fn list_indexes_shape_and_default_name() {
    let spec = IndexSpec::parse(&doc! {"key": {"title": "text", "body": "text"}}).unwrap();
    assert_eq!(spec.name, "title_text_body_text");
    assert_eq!(
        spec.document,
        doc! {"v": 2, "key": {"_fts": "text", "_ftsx": 1}, "name": "title_text_body_text",
        "weights": {"body": 1, "title": 1}, "default_language": "english",
        "language_override": "language", "textIndexVersion": 3}
    );
    // The catalog re-reads the shown form.
    let again = IndexSpec::parse(&spec.document).unwrap();
    assert_eq!(again.text, spec.text);
    assert_eq!(again.document, spec.document);
}

#[test]
fn spec_errors_are_mongodbs() {
    let code = |spec: bson::Document| IndexSpec::parse(&spec).unwrap_err().code;
    assert_eq!(code(doc! {"key": {"a": "text"}, "weights": 3}), 17284);
    assert_eq!(
        code(doc! {"key": {"a": "text"}, "weights": {"a": "x"}}),
        17283
    );
    assert_eq!(
        code(doc! {"key": {"a": "text"}, "weights": {"a": 0}}),
        16674
    );
    assert_eq!(
        code(doc! {"key": {"a": "text"}, "default_language": 5}),
        17263
    );
    assert_eq!(
        code(doc! {"key": {"a": "text"}, "default_language": "klingon"}),
        17264
    );
    assert_eq!(
        code(doc! {"key": {"a": "text"}, "language_override": ""}),
        17136
    );
    assert_eq!(code(doc! {"key": {"a": "text", "b": 1}}), 67);
    assert_eq!(code(doc! {"key": {"a": 1}, "weights": {"a": 1}}), 67);
}

#[test]
fn terms_or_phrases_and_negations() {
    let idx = index(doc! {"key": {"subject": "text"}});
    let coffee = doc! {"subject": "coffee and cake"};
    let tea = doc! {"subject": "Green tea"};
    let shop = doc! {"subject": "The coffee shop"};
    let s = search(&idx, doc! {"$search": "coffee tea"});
    assert!(s.matches(&coffee) && s.matches(&tea) && s.matches(&shop));
    let s = search(&idx, doc! {"$search": "\"coffee shop\""});
    assert!(!s.matches(&coffee) && s.matches(&shop));
    let s = search(&idx, doc! {"$search": "coffee -shop"});
    assert!(s.matches(&coffee) && !s.matches(&shop));
    let s = search(&idx, doc! {"$search": "the"});
    assert!(!s.matches(&shop), "stop words alone match nothing");
    let s = search(&idx, doc! {"$search": "cakes"});
    assert!(s.matches(&coffee), "stemmed");
}

#[test]
fn case_and_diacritic_sensitivity() {
    let idx = index(doc! {"key": {"subject": "text"}});
    let cafe = doc! {"subject": "Café Con Leche"};
    assert!(search(&idx, doc! {"$search": "cafe"}).matches(&cafe));
    assert!(!search(&idx, doc! {"$search": "cafe", "$diacriticSensitive": true}).matches(&cafe));
    assert!(search(&idx, doc! {"$search": "Café", "$diacriticSensitive": true}).matches(&cafe));
    assert!(!search(&idx, doc! {"$search": "café", "$caseSensitive": true}).matches(&cafe));
    assert!(search(&idx, doc! {"$search": "Café", "$caseSensitive": true}).matches(&cafe));
    let phrase = doc! {"$search": "\"Con Leche\"", "$caseSensitive": true};
    assert!(search(&idx, phrase).matches(&cafe));
    let phrase = doc! {"$search": "\"con leche\"", "$caseSensitive": true};
    assert!(!search(&idx, phrase).matches(&cafe));
}

#[test]
fn language_none_and_override() {
    let idx = index(doc! {"key": {"a": "text"}});
    let s = search(&idx, doc! {"$search": "the", "$language": "none"});
    assert!(s.matches(&doc! {"a": "the end", "language": "none"}));
    assert!(!s.matches(&doc! {"a": "the end"}), "english drops 'the'");
    let bad = IndexSpec::parse(&doc! {"key": {"a": "text"}})
        .unwrap()
        .entries(&doc! {"a": "x", "language": "klingon"})
        .unwrap_err();
    assert_eq!(bad.code, 17262);
}

#[test]
fn scores_follow_mongodbs_formula() {
    let idx = index(doc! {"key": {"a": "text", "b": "text"}, "weights": {"a": 10}});
    let s = search(&idx, doc! {"$search": "blue"});
    // One string "blue": freq 1, coefficient 0.5*1/1+0.5 = 1, whole-string boost 1.1.
    assert!((s.score(&doc! {"b": "blue"}) - 1.1).abs() < 1e-9);
    // "blue sky": coefficient 0.75; weight 10 on a.
    assert!((s.score(&doc! {"a": "blue sky"}) - 7.5).abs() < 1e-9);
    // "blue blue sky": freq 1 + 1/2, coefficient 0.5*2/3+0.5.
    let expected = 1.5 * (0.5 * 2.0 / 3.0 + 0.5);
    assert!((s.score(&doc! {"b": "blue blue sky"}) - expected).abs() < 1e-9);
}

#[test]
fn wildcard_indexes_every_string_but_the_language() {
    let idx = index(doc! {"key": {"$**": "text"}});
    let s = search(&idx, doc! {"$search": "deep"});
    assert!(s.matches(&doc! {"x": {"y": ["deep water"]}}));
    assert!(!search(&idx, doc! {"$search": "english"}).matches(&doc! {"language": "english"}));
}

#[test]
fn entries_are_engine_token_chunks() {
    let spec = IndexSpec::parse(&doc! {"key": {"a": "text"}}).unwrap();
    let entries = spec.entries(&doc! {"a": "ab ab"}).unwrap().unwrap();
    assert_eq!(entries.keys, vec![b"t6162".to_vec()]);
    assert!(spec.entries(&doc! {"b": "x"}).unwrap().is_none());
    let long: Vec<String> = (0..2000).map(|i| format!("w{i}")).collect();
    let entries = spec.entries(&doc! {"a": long.join(" ")}).unwrap().unwrap();
    assert!(entries.keys.len() > 1 && entries.keys.iter().all(|k| k.len() <= 1000));
}

#[test]
fn operand_errors() {
    let code = |v: Bson| TextSearch::parse(&v).unwrap_err().code;
    assert_eq!(code(Bson::Int32(1)), 2);
    assert_eq!(code(Bson::Document(doc! {})), 40414);
    assert_eq!(code(Bson::Document(doc! {"$search": 1})), 14);
    assert_eq!(code(Bson::Document(doc! {"$search": "a", "$x": 1})), 40415);
    assert_eq!(
        code(Bson::Document(
            doc! {"$search": "a", "$language": "klingon"}
        )),
        2
    );
}

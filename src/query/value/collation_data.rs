//! The data ICU4X builds a MongoDB collator from: its compiled data (collation tailorings
//! and the normalizer's decompositions), with one change — the locale's metadata says
//! whether secondary differences (accents) compare from the back of the string as the
//! collation's `backwards` asks, not only as the locale implies (`fr_CA`). ICU4X offers no
//! option or locale keyword for it (the BCP-47 `kb` key is unsupported) but reads the flag
//! from this metadata in both its comparison and its sort keys, exactly as it does for
//! `fr_CA`.
//!
//! Also here: which collation types (`-u-co-…`) the compiled data has for a locale, so a
//! MongoDB locale variant ICU4X cannot honour is refused rather than silently replaced by
//! the locale's standard order.
//!
//! Not for: parsing or validating collations, or comparing (`collation.rs`).

use icu_collator::provider::{
    Baked as CollationData, CollationDiacriticsV1, CollationJamoV1, CollationMetadata,
    CollationMetadataV1, CollationReorderingV1, CollationRootV1, CollationSpecialPrimariesV1,
    CollationTailoringV1,
};
use icu_locale_core::Locale;
use icu_normalizer::provider::{
    Baked as NormalizerData, NormalizerNfdDataV1, NormalizerNfdTablesV1,
};
use icu_provider::prelude::{
    DataError, DataIdentifierBorrowed, DataLocale, DataMarkerAttributes, DataPayload, DataProvider,
    DataRequest, DataRequestMetadata, DataResponse,
};

/// ICU4X's compiled collation data with the backward-secondary flag of every locale set to
/// `backwards`.
pub(super) struct CollationDataProvider {
    pub(super) backwards: bool,
}

/// Bit 7 of `CollationMetadata::bits`: backward secondary level (ICU4X's
/// `BACWARD_SECOND_LEVEL_MASK`, private to the crate; checked by this module's tests
/// against the `fr_CA` data, which sets it).
const BACKWARD_SECOND_LEVEL: u32 = 1 << 7;

impl DataProvider<CollationMetadataV1> for CollationDataProvider {
    fn load(&self, request: DataRequest) -> Result<DataResponse<CollationMetadataV1>, DataError> {
        let mut response: DataResponse<CollationMetadataV1> = CollationData.load(request)?;
        let bits = response.payload.get().bits;
        let bits = match self.backwards {
            true => bits | BACKWARD_SECOND_LEVEL,
            false => bits & !BACKWARD_SECOND_LEVEL,
        };
        response.payload = DataPayload::from_owned(CollationMetadata { bits });
        Ok(response)
    }
}

/// The other data, as compiled.
macro_rules! compiled {
    ($data:ident: $($marker:ty),*) => {$(
        impl DataProvider<$marker> for CollationDataProvider {
            fn load(&self, request: DataRequest) -> Result<DataResponse<$marker>, DataError> {
                $data.load(request)
            }
        }
    )*};
}
compiled!(CollationData: CollationRootV1, CollationTailoringV1, CollationDiacriticsV1,
    CollationJamoV1, CollationReorderingV1, CollationSpecialPrimariesV1);
compiled!(NormalizerData: NormalizerNfdDataV1, NormalizerNfdTablesV1);

/// Whether the compiled data has the collation type `bcp47_type` (`phonebk`, `trad`, …) for
/// `locale` or a locale it falls back to (`de-AT` has its own phonebook, `eor` is the root's).
pub(super) fn has_collation_type(locale: &Locale, bcp47_type: &str) -> bool {
    let Ok(attributes) = DataMarkerAttributes::try_from_str(bcp47_type) else {
        return false;
    };
    let locale = DataLocale::from(locale);
    let mut metadata = DataRequestMetadata::default();
    // A missing type is an answer here, not an error worth logging.
    metadata.silent = true;
    let request = DataRequest {
        id: DataIdentifierBorrowed::for_marker_attributes_and_locale(attributes, &locale),
        metadata,
    };
    DataProvider::<CollationMetadataV1>::load(&CollationData, request).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata_bits(tag: &str) -> u32 {
        let locale: Locale = tag.parse().unwrap();
        let locale = DataLocale::from(&locale);
        let request = DataRequest {
            id: DataIdentifierBorrowed::for_locale(&locale),
            ..Default::default()
        };
        let response: DataResponse<CollationMetadataV1> = CollationData.load(request).unwrap();
        response.payload.get().bits
    }

    #[test]
    fn the_backward_bit_is_the_one_fr_ca_sets() {
        assert_ne!(metadata_bits("fr-CA") & BACKWARD_SECOND_LEVEL, 0);
        assert_eq!(metadata_bits("fr") & BACKWARD_SECOND_LEVEL, 0);
        assert_eq!(
            metadata_bits("fr-CA") & !BACKWARD_SECOND_LEVEL,
            metadata_bits("fr") & !BACKWARD_SECOND_LEVEL,
            "fr_CA differs from fr by the backward bit alone"
        );
    }

    #[test]
    fn collation_types_are_found_where_the_data_has_them() {
        let has = |tag: &str, kind: &str| has_collation_type(&tag.parse().unwrap(), kind);
        assert!(has("de", "phonebk"));
        assert!(has("de-AT", "phonebk"));
        assert!(has("es", "trad"));
        assert!(has("de", "eor"));
        assert!(!has("en", "phonebk"));
        assert!(!has("de", "search"));
    }
}

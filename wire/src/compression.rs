//! Payload compression for `OP_COMPRESSED`: snappy (raw, unframed), zlib and zstd.
//!
//! Decompression is bounded: the caller passes the declared `uncompressedSize` (already
//! checked against the message size limit), and no decompressor is allowed to produce or
//! allocate more than that, so a small frame cannot inflate into a large allocation.
//! Not for choosing a compressor (that is the handshake's job in the server).

use std::borrow::Cow;
use std::io::{Read, Write};

use crate::error::WireError;
use crate::message::Compressor;

/// Compressor id 0: the payload is stored as is.
pub(crate) const NOOP_COMPRESSOR_ID: u8 = 0;

fn decompression_error(e: impl std::fmt::Display) -> WireError {
    WireError::Decompression(e.to_string())
}

/// Compresses `data` with `compressor`.
pub(crate) fn compress(compressor: Compressor, data: &[u8]) -> Result<Vec<u8>, WireError> {
    match compressor {
        Compressor::Snappy => snap::raw::Encoder::new()
            .compress_vec(data)
            .map_err(|e| WireError::Malformed(format!("snappy compression failed: {e}"))),
        Compressor::Zlib => {
            let mut enc = flate2::write::ZlibEncoder::new(
                Vec::with_capacity(data.len() / 2 + 64),
                flate2::Compression::default(),
            );
            enc.write_all(data)?;
            Ok(enc.finish()?)
        }
        Compressor::Zstd => {
            zstd::bulk::compress(data, zstd::DEFAULT_COMPRESSION_LEVEL).map_err(WireError::Io)
        }
    }
}

/// Reads at most `expected + 1` bytes from `reader` and requires exactly `expected`.
fn read_bounded(reader: impl Read, expected: usize) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::new();
    let limit = (expected as u64).saturating_add(1);
    reader
        .take(limit)
        .read_to_end(&mut out)
        .map_err(decompression_error)?;
    check_size(out.len(), expected)?;
    Ok(out)
}

fn check_size(actual: usize, expected: usize) -> Result<(), WireError> {
    if actual > expected {
        Err(WireError::Decompression(format!(
            "payload inflates beyond the declared uncompressedSize {expected}"
        )))
    } else if actual < expected {
        Err(WireError::Decompression(format!(
            "payload inflates to {actual} bytes, declared uncompressedSize is {expected}"
        )))
    } else {
        Ok(())
    }
}

/// Smallest zstd window log covering `size` bytes, within zstd's limits (10..=31).
fn zstd_window_log(size: usize) -> u32 {
    let needed = usize::BITS - size.saturating_sub(1).leading_zeros();
    needed.clamp(10, 31)
}

/// Decompresses `data` compressed with compressor id `id` into exactly `expected` bytes.
/// Returns the compressor (None for noop) and the payload.
pub(crate) fn decompress(
    id: u8,
    data: &[u8],
    expected: usize,
) -> Result<(Option<Compressor>, Cow<'_, [u8]>), WireError> {
    if id == NOOP_COMPRESSOR_ID {
        check_size(data.len(), expected)?;
        return Ok((None, Cow::Borrowed(data)));
    }
    let compressor = Compressor::from_id(id).ok_or(WireError::UnknownCompressor(id))?;
    let out = match compressor {
        Compressor::Snappy => {
            let claimed = snap::raw::decompress_len(data).map_err(decompression_error)?;
            check_size(claimed, expected)?;
            let mut out = vec![0u8; expected];
            let written = snap::raw::Decoder::new()
                .decompress(data, &mut out)
                .map_err(decompression_error)?;
            check_size(written, expected)?;
            out
        }
        Compressor::Zlib => read_bounded(flate2::read::ZlibDecoder::new(data), expected)?,
        Compressor::Zstd => {
            let mut dec =
                zstd::stream::read::Decoder::with_buffer(data).map_err(decompression_error)?;
            // A frame may declare a huge window; refuse windows larger than the output.
            dec.window_log_max(zstd_window_log(expected))
                .map_err(decompression_error)?;
            read_bounded(dec, expected)?
        }
    };
    Ok((Some(compressor), Cow::Owned(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compressor_round_trips() {
        let data: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        for c in Compressor::ALL {
            let packed = compress(c, &data).unwrap();
            assert!(packed.len() < data.len(), "{c:?} did not compress");
            let (got_c, out) = decompress(c.id(), &packed, data.len()).unwrap();
            assert_eq!(got_c, Some(c));
            assert_eq!(&*out, &data[..]);
        }
    }

    #[test]
    fn size_mismatch_is_an_error_for_every_compressor() {
        let data = vec![7u8; 100_000];
        for c in Compressor::ALL {
            let packed = compress(c, &data).unwrap();
            assert!(matches!(
                decompress(c.id(), &packed, 1_000),
                Err(WireError::Decompression(_))
            ));
            assert!(matches!(
                decompress(c.id(), &packed, 200_000),
                Err(WireError::Decompression(_))
            ));
        }
    }

    #[test]
    fn noop_and_unknown_ids() {
        let (c, out) = decompress(0, b"abc", 3).unwrap();
        assert_eq!(c, None);
        assert_eq!(&*out, b"abc");
        assert!(decompress(0, b"abc", 4).is_err());
        assert!(matches!(
            decompress(9, b"abc", 3),
            Err(WireError::UnknownCompressor(9))
        ));
    }

    #[test]
    fn garbage_input_fails_cleanly() {
        for c in Compressor::ALL {
            assert!(decompress(c.id(), b"\xff\xfe\xfd not compressed", 50).is_err());
        }
    }
}

//! Checked big-endian field readers.
//!
//! Every header decoder reads its fixed part through [`array()`], which hands
//! back a `&[u8; N]` only when all `N` bytes are there; indexing that array
//! with constants cannot go out of bounds, so the decoders need no runtime
//! index checks beyond the one length check per header.

/// `N` bytes of `b` starting at `off`, if they are all present.
#[inline(always)]
pub(crate) fn array<const N: usize>(b: &[u8], off: usize) -> Option<&[u8; N]> {
    let end = off.checked_add(N)?;
    b.get(off..end)?.try_into().ok()
}

#[inline(always)]
pub(crate) fn be16(b: [u8; 2]) -> u16 {
    u16::from_be_bytes(b)
}

#[inline(always)]
pub(crate) fn be32(b: [u8; 4]) -> u32 {
    u32::from_be_bytes(b)
}

/// Big-endian u32 at `off`, if present.
#[inline(always)]
pub(crate) fn be32_at(b: &[u8], off: usize) -> Option<u32> {
    array::<4>(b, off).map(|a| be32(*a))
}

/// Byte at `off`, if present.
#[inline(always)]
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_check_bounds() {
        let b = [1u8, 2, 3, 4, 5];
        assert_eq!(array::<2>(&b, 3), Some(&[4, 5]));
        assert_eq!(array::<2>(&b, 4), None);
        assert_eq!(array::<1>(&b, usize::MAX), None);
        assert_eq!(be32_at(&b, 1), Some(0x0203_0405));
        assert_eq!(be32_at(&b, 2), None);
        assert_eq!(u8_at(&b, 5), None);
    }
}

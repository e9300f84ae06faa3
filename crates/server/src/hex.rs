//! Bytes as lowercase hex, two digits a byte (digests: script SHA1s, DEBUG DIGEST, the
//! default user's password hash in a rewritten config).

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The two digits of `b`.
#[inline]
fn digits(b: u8) -> [u8; 2] {
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]
}

/// The hex of `bytes` in an array of `N` digits (`N` twice `bytes`' length; digits past
/// the end of `bytes` stay zero).
pub fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&digits(b));
    }
    out
}

/// The hex of `bytes` as a string.
pub fn to_string(bytes: &[u8]) -> String {
    bytes
        .iter()
        .flat_map(|&b| digits(b).map(char::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_two_digits_a_byte() {
        let bytes = [0x00, 0x09, 0x0a, 0x7f, 0xa5, 0xff];
        assert_eq!(to_string(&bytes), "00090a7fa5ff");
        assert_eq!(&to_array::<12>(&bytes), b"00090a7fa5ff");
        assert_eq!(to_string(&[]), "");
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(to_string(&all), expected);
    }
}

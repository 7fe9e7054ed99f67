# Derives the constants of crc16_folding.c (CRC-16/XMODEM, P(x) = x^16 + x^12 + x^5 + 1 = 0x11021,
# not reflected). Polynomials over GF(2) are Python ints: bit i is the coefficient of x^i.
P = 0x11021

def divmod_poly(a, b):
    """Quotient and remainder of a(x) / b(x) over GF(2)."""
    q = 0
    while a.bit_length() >= b.bit_length():
        shift = a.bit_length() - b.bit_length()
        q ^= 1 << shift
        a ^= b << shift
    return q, a

def xpow_mod(k):
    return divmod_poly(1 << k, P)[1]

# Folding a 128-bit lane T bits forward: hi64 * (x^(T+64) mod P) ^ lo64 * (x^T mod P).
for name, t in (("fold4 (512 bits, 4 lanes)", 512), ("fold1 (128 bits)", 128), ("final (16 bits, x^16 of the CRC)", 16)):
    print(f"{name}: x^{t + 64} mod P = 0x{xpow_mod(t + 64):04x}, x^{t} mod P = 0x{xpow_mod(t):04x}")

# Barrett reduction of an 80-bit V: q = floor(V / P) = floor((V >> 16) * mu / x^64) with
# mu = floor(x^80 / P), 65 bits; its x^64 term is applied as an XOR, the other 64 bits by clmul.
mu = divmod_poly(1 << 80, P)[0]
assert mu >> 64 == 1
print(f"Barrett: mu = floor(x^80 / P) = 0x{mu:x}; low 64 bits 0x{mu & (2**64 - 1):016x}; P = 0x{P:05x}")

# Sanity: the CRC is M(x) * x^16 mod P, M(x) the message with the first byte's MSB highest.
m = int.from_bytes(b"123456789", "big")
assert divmod_poly(m << 16, P)[1] == 0x31C3
print("check: CRC-16/XMODEM(\"123456789\") = 0x31c3")

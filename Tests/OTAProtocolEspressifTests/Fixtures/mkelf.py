import struct
# Minimal ELF32 little-endian RISC-V executable: one PT_LOAD segment and its section,
# for esptool elf2image (ESP32-C3 flash-mapped instruction bus 0x42000000).
text = bytes((i * 37 + 11) & 0xFF for i in range(3000))
rodata = bytes((i * 13 + 5) & 0xFF for i in range(1000))
shstr = b"\0.flash.text\0.flash.rodata\0.shstrtab\0"
ehsize, phsize, shsize = 52, 32, 40
phoff = ehsize
data_off = phoff + 2 * phsize
text_off = data_off
ro_off = text_off + len(text)
shstr_off = ro_off + len(rodata)
shoff = (shstr_off + len(shstr) + 3) & ~3
text_addr, ro_addr = 0x42000020, 0x3C000020
entry = text_addr
eh = b"\x7fELF" + bytes([1, 1, 1, 0]) + bytes(8)
eh += struct.pack("<HHIIIIIHHHHHH", 2, 243, 1, entry, phoff, shoff, 0, ehsize, phsize, 2, shsize, 4, 3)
ph = struct.pack("<IIIIIIII", 1, text_off, text_addr, text_addr, len(text), len(text), 5, 4)
ph += struct.pack("<IIIIIIII", 1, ro_off, ro_addr, ro_addr, len(rodata), len(rodata), 4, 4)
def sh(name, typ, flags, addr, off, size): return struct.pack("<IIIIIIIIII", name, typ, flags, addr, off, size, 0, 0, 4, 0)
shs = sh(0, 0, 0, 0, 0, 0)
shs += sh(shstr.index(b".flash.text"), 1, 6, text_addr, text_off, len(text))
shs += sh(shstr.index(b".flash.rodata"), 1, 2, ro_addr, ro_off, len(rodata))
shs += sh(shstr.index(b".shstrtab"), 3, 0, 0, shstr_off, len(shstr))
body = eh + ph + text + rodata + shstr
body += bytes(shoff - len(body)) + shs
open("app.elf", "wb").write(body)

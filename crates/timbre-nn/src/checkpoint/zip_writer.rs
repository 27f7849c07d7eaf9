//! The zip archive `torch.save` writes, laid out as PyTorch's `PyTorchStreamWriter` has miniz
//! lay it out (pytorch/pytorch `caffe2/serialize/inline_container.cc`, `third_party/miniz`):
//! stored records, each padded by an `FB` extra field so its data starts on a 64-byte boundary,
//! sizes in a data descriptor after the data, zip64 end records always. torch's loader computes
//! storage offsets from this exact layout (`_get_offset` in `torch/serialization.py`, used for
//! `map_location="meta"` and fake tensors), so it is followed byte for byte.

use std::io::{self, Write};

/// `.storage_alignment`, torch's default.
pub(super) const ALIGNMENT: u64 = 64;

const LOCAL_HEADER: u64 = 30;
const U32_LIMIT: u64 = 0xffff_ffff;
/// General purpose flags: names are UTF-8 (bit 11); sizes follow the data (bit 3).
const FLAG_UTF8: u16 = 0x0800;
const FLAG_DESCRIPTOR: u16 = 0x0008;

pub(super) struct RecordWriter<W: Write> {
    out: W,
    offset: u64,
    prefix: String,
    central: Vec<u8>,
    records: u64,
}

impl<W: Write> RecordWriter<W> {
    /// Records go under `<archive_name>/`, as torch names the folder after the file.
    pub fn new(out: W, archive_name: &str) -> Self {
        Self {
            out,
            offset: 0,
            prefix: format!("{archive_name}/"),
            central: Vec::new(),
            records: 0,
        }
    }

    pub fn record(&mut self, name: &str, data: &[u8]) -> io::Result<u32> {
        self.streamed_record(name, data.len() as u64, |sink| sink.write_all(data))
    }

    /// A record of `len` bytes that `fill` writes into the sink in pieces; returns its CRC-32.
    pub fn streamed_record(
        &mut self,
        name: &str,
        len: u64,
        fill: impl FnOnce(&mut CrcSink<'_, W>) -> io::Result<()>,
    ) -> io::Result<u32> {
        let full_name = format!("{}{name}", self.prefix);
        let header_offset = self.offset;
        let zip64 = zip64_extra(len, header_offset);
        let start = header_offset + LOCAL_HEADER + full_name.len() as u64 + 4 + zip64.len() as u64;
        let padding = (ALIGNMENT - start % ALIGNMENT) % ALIGNMENT;
        let flags = if len > 0 {
            FLAG_UTF8 | FLAG_DESCRIPTOR
        } else {
            FLAG_UTF8
        };

        let mut header = Vec::with_capacity(LOCAL_HEADER as usize + full_name.len() + 128);
        header.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        // version needed, flags, method (stored), time, date, CRC and sizes (in the descriptor)
        put16(&mut header, 0);
        put16(&mut header, flags);
        header.extend_from_slice(&[0; 18]);
        put16(&mut header, full_name.len() as u16);
        put16(&mut header, (zip64.len() as u64 + 4 + padding) as u16);
        header.extend_from_slice(full_name.as_bytes());
        header.extend_from_slice(&zip64);
        header.extend_from_slice(b"FB");
        put16(&mut header, padding as u16);
        header.resize(header.len() + padding as usize, b'Z');
        self.out.write_all(&header)?;

        let mut sink = CrcSink {
            out: &mut self.out,
            crc: crc32fast::Hasher::new(),
            written: 0,
        };
        fill(&mut sink)?;
        let (crc, written) = (sink.crc.finalize(), sink.written);
        if written != len {
            return Err(io::Error::other(format!(
                "{full_name}: {written} bytes written for a record of {len}"
            )));
        }
        let mut descriptor = Vec::with_capacity(24);
        if len > 0 {
            descriptor.extend_from_slice(&0x0807_4b50u32.to_le_bytes());
            descriptor.extend_from_slice(&crc.to_le_bytes());
            if zip64.is_empty() {
                descriptor.extend_from_slice(&(len as u32).to_le_bytes());
                descriptor.extend_from_slice(&(len as u32).to_le_bytes());
            } else {
                descriptor.extend_from_slice(&len.to_le_bytes());
                descriptor.extend_from_slice(&len.to_le_bytes());
            }
            self.out.write_all(&descriptor)?;
        }
        self.offset += header.len() as u64 + len + descriptor.len() as u64;

        let central = &mut self.central;
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        put16(central, 0); // version made by
        put16(central, 0); // version needed
        put16(central, flags);
        central.extend_from_slice(&[0; 6]); // method, time, date
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&(len.min(U32_LIMIT) as u32).to_le_bytes());
        central.extend_from_slice(&(len.min(U32_LIMIT) as u32).to_le_bytes());
        put16(central, full_name.len() as u16);
        put16(central, zip64.len() as u16);
        central.extend_from_slice(&[0; 10]); // comment length, disk, attributes
        central.extend_from_slice(&(header_offset.min(U32_LIMIT) as u32).to_le_bytes());
        central.extend_from_slice(full_name.as_bytes());
        central.extend_from_slice(&zip64);
        self.records += 1;
        Ok(crc)
    }

    /// Writes the central directory and the end records; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        let (cd_offset, cd_size) = (self.offset, self.central.len() as u64);
        self.out.write_all(&self.central)?;
        let eocd64_offset = cd_offset + cd_size;
        let mut end = Vec::with_capacity(98);
        end.extend_from_slice(&0x0606_4b50u32.to_le_bytes());
        end.extend_from_slice(&44u64.to_le_bytes());
        put16(&mut end, 0x031e); // made by: Unix, 3.0
        put16(&mut end, 45); // needed: zip64
        end.extend_from_slice(&[0; 8]); // disk numbers
        for value in [self.records, self.records, cd_size, cd_offset] {
            end.extend_from_slice(&value.to_le_bytes());
        }
        end.extend_from_slice(&0x0706_4b50u32.to_le_bytes());
        end.extend_from_slice(&0u32.to_le_bytes());
        end.extend_from_slice(&eocd64_offset.to_le_bytes());
        end.extend_from_slice(&1u32.to_le_bytes());
        end.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        end.extend_from_slice(&[0; 4]); // disk numbers
        let records = self.records.min(0xffff) as u16;
        put16(&mut end, records);
        put16(&mut end, records);
        end.extend_from_slice(&(cd_size.min(U32_LIMIT) as u32).to_le_bytes());
        end.extend_from_slice(&(cd_offset.min(U32_LIMIT) as u32).to_le_bytes());
        put16(&mut end, 0);
        self.out.write_all(&end)?;
        Ok(self.out)
    }
}

/// The zip64 extended information miniz adds when a size or the header's offset does not fit
/// 32 bits: both sizes for a big record, the offset for a far one.
fn zip64_extra(len: u64, header_offset: u64) -> Vec<u8> {
    let (big, far) = (len >= U32_LIMIT, header_offset >= U32_LIMIT);
    if !big && !far {
        return Vec::new();
    }
    let mut extra = Vec::with_capacity(28);
    put16(&mut extra, 0x0001);
    put16(&mut extra, 8 * (2 * big as u16 + far as u16));
    if big {
        extra.extend_from_slice(&len.to_le_bytes());
        extra.extend_from_slice(&len.to_le_bytes());
    }
    if far {
        extra.extend_from_slice(&header_offset.to_le_bytes());
    }
    extra
}

fn put16(buffer: &mut Vec<u8>, value: u16) {
    buffer.extend_from_slice(&value.to_le_bytes());
}

/// Passes a record's bytes through, keeping their CRC-32 and count.
pub(super) struct CrcSink<'a, W: Write> {
    out: &'a mut W,
    crc: crc32fast::Hasher,
    written: u64,
}

impl<W: Write> CrcSink<'_, W> {
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.crc.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_data_starts_on_the_alignment() {
        let mut writer = RecordWriter::new(Vec::new(), "t211");
        writer.record("data.pkl", &[1; 398]).unwrap();
        writer.record(".format_version", b"1").unwrap();
        writer.record("data/0", &[]).unwrap();
        let bytes = writer.finish().unwrap();
        // Offsets torch 2.11 gives the same records (its own file of these sizes).
        assert_eq!(&bytes[26..28], &13u16.to_le_bytes());
        assert_eq!(&bytes[28..30], &21u16.to_le_bytes());
        assert_eq!(&bytes[64..65], &[1]);
        assert_eq!(&bytes[478..482], b"PK\x03\x04");
        assert_eq!(bytes[576], b'1');
        let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        assert_eq!(archive.len(), 3);
    }
}

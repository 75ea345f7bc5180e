//! The recogniser's last layer cut to the classes it may choose: the model file's bytes (ONNX, protobuf) with the classifier's weight and bias keeping only the columns of the classes kept, and every declared shape of that many classes changed to match; the rest of the file copied as it is.
//!
//! PP-OCRv6's recogniser scores 18 710 classes at every step of a line, nearly all of them Han,
//! kana and Hangul, which an English screen never shows (they are never chosen: [`crate::east_asian`]).
//! That layer and its softmax were the largest single cost in a profile of the recogniser. The
//! few fields of ONNX's messages read and written here are named by their numbers in
//! `onnx.proto`; a file laid out otherwise is left alone (the caller loads it whole).

/// ModelProto.graph, .metadata_props; GraphProto.initializer, .output, .value_info;
/// TensorProto.dims, .data_type, .raw_data; ValueInfoProto.type; TypeProto.tensor_type;
/// TypeProto.Tensor.shape; TensorShapeProto.dim; Dimension.dim_value; StringStringEntryProto.
const MODEL_GRAPH: u32 = 7;
const MODEL_METADATA: u32 = 14;
const GRAPH_INITIALIZER: u32 = 5;
const GRAPH_OUTPUT: u32 = 12;
const GRAPH_VALUE_INFO: u32 = 13;
const TENSOR_DIMS: u32 = 1;
const TENSOR_DATA_TYPE: u32 = 2;
const TENSOR_RAW_DATA: u32 = 9;
const VALUE_TYPE: u32 = 2;
const TYPE_TENSOR: u32 = 1;
const TENSOR_TYPE_SHAPE: u32 = 2;
const SHAPE_DIM: u32 = 1;
const DIM_VALUE: u32 = 1;
const ENTRY_KEY: u32 = 1;
const ENTRY_VALUE: u32 = 2;
/// TensorProto.DataType.FLOAT.
const FLOAT: u64 = 1;

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// One field of a protobuf message: its number, its wire type, and its value (a varint's
/// value, else the bytes of its payload).
#[derive(Debug, Clone, Copy)]
struct Field<'a> {
    num: u32,
    wire: u8,
    varint: u64,
    bytes: &'a [u8],
}

fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of a message in order, or none when the bytes are not one.
fn fields(buf: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let key = varint(buf, &mut at)?;
        let (num, wire) = (u32::try_from(key >> 3).ok()?, (key & 7) as u8);
        let f = match wire {
            VARINT => Field {
                num,
                wire,
                varint: varint(buf, &mut at)?,
                bytes: &[],
            },
            I64 | I32 => {
                let n = if wire == I64 { 8 } else { 4 };
                let bytes = buf.get(at..at + n)?;
                at += n;
                Field {
                    num,
                    wire,
                    varint: 0,
                    bytes,
                }
            }
            LEN => {
                let n = usize::try_from(varint(buf, &mut at)?).ok()?;
                let bytes = buf.get(at..at.checked_add(n)?)?;
                at += n;
                Field {
                    num,
                    wire,
                    varint: 0,
                    bytes,
                }
            }
            _ => return None,
        };
        out.push(f);
    }
    Some(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put(out: &mut Vec<u8>, f: Field<'_>) {
    put_varint(out, (u64::from(f.num) << 3) | u64::from(f.wire));
    match f.wire {
        VARINT => put_varint(out, f.varint),
        LEN => {
            put_varint(out, f.bytes.len() as u64);
            out.extend_from_slice(f.bytes);
        }
        _ => out.extend_from_slice(f.bytes),
    }
}

/// `buf` with each length-delimited field numbered `num` given to `change`, which returns its
/// new payload (or none: the message cannot be changed).
fn map_len(
    buf: &[u8],
    mut change: impl FnMut(u32, &[u8]) -> Option<Option<Vec<u8>>>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(buf.len());
    for f in fields(buf)? {
        if f.wire == LEN {
            if let Some(new) = change(f.num, f.bytes)? {
                put(&mut out, Field { bytes: &new, ..f });
                continue;
            }
        }
        put(&mut out, f);
    }
    Some(out)
}

/// The string value of the model's metadata entry `key` (the recogniser's `character` list).
pub fn metadata(model: &[u8], key: &str) -> Option<String> {
    fields(model)?
        .into_iter()
        .filter(|f| f.num == MODEL_METADATA && f.wire == LEN)
        .find_map(|f| {
            let entry = fields(f.bytes)?;
            let text = |n: u32| {
                entry
                    .iter()
                    .find(|e| e.num == n && e.wire == LEN)
                    .and_then(|e| std::str::from_utf8(e.bytes).ok())
            };
            (text(ENTRY_KEY)? == key).then(|| text(ENTRY_VALUE).unwrap_or("").to_string())
        })
}

/// `model` with its classifier (the one float weight [h, `classes`] and the one bias
/// [`classes`]) keeping only the classes `keep` (ascending, each < `classes`), and every
/// declared dimension of `classes` made `keep.len()`. None when the model does not have
/// exactly that weight and that bias in raw floats.
pub fn keep_classes(model: &[u8], classes: usize, keep: &[usize]) -> Option<Vec<u8>> {
    if keep.is_empty() || keep.iter().any(|&k| k >= classes) || !keep.is_sorted() {
        return None;
    }
    let (mut weights, mut biases) = (0, 0);
    let out = map_len(model, |num, graph| {
        if num != MODEL_GRAPH {
            return Some(None);
        }
        map_len(graph, |num, msg| match num {
            GRAPH_INITIALIZER => {
                let cut = cut_tensor(msg, classes, keep)?;
                match &cut {
                    Some((_, 2)) => weights += 1,
                    Some((_, 1)) => biases += 1,
                    _ => {}
                }
                Some(cut.map(|(t, _)| t))
            }
            GRAPH_OUTPUT | GRAPH_VALUE_INFO => resize_value(msg, classes, keep.len()).map(Some),
            _ => Some(None),
        })
        .map(Some)
    })?;
    (weights == 1 && biases == 1).then_some(out)
}

/// A float initializer whose last dimension is `classes` (rank 1 or 2) with only the columns
/// `keep`, and its rank; none for any other tensor.
fn cut_tensor(t: &[u8], classes: usize, keep: &[usize]) -> Option<Option<(Vec<u8>, usize)>> {
    let fs = fields(t)?;
    let mut dims = Vec::new();
    for f in fs.iter().filter(|f| f.num == TENSOR_DIMS) {
        match f.wire {
            VARINT => dims.push(f.varint),
            LEN => {
                let mut at = 0;
                while at < f.bytes.len() {
                    dims.push(varint(f.bytes, &mut at)?);
                }
            }
            _ => return None,
        }
    }
    let float = fs
        .iter()
        .any(|f| f.num == TENSOR_DATA_TYPE && f.wire == VARINT && f.varint == FLOAT);
    if !float || dims.last() != Some(&(classes as u64)) || dims.len() > 2 {
        return Some(None);
    }
    let rows = dims
        .first()
        .filter(|_| dims.len() == 2)
        .copied()
        .unwrap_or(1) as usize;
    let raw = fs
        .iter()
        .find(|f| f.num == TENSOR_RAW_DATA && f.wire == LEN)?;
    if raw.bytes.len() != rows * classes * 4 {
        return None;
    }
    let mut data = Vec::with_capacity(rows * keep.len() * 4);
    for row in raw.bytes.chunks_exact(classes * 4) {
        for &k in keep {
            data.extend_from_slice(&row[k * 4..k * 4 + 4]);
        }
    }
    let mut out = Vec::with_capacity(data.len() + 64);
    if dims.len() == 2 {
        put(&mut out, dim_field(rows as u64));
    }
    put(&mut out, dim_field(keep.len() as u64));
    for f in fs.iter().filter(|f| f.num != TENSOR_DIMS) {
        if f.num == TENSOR_RAW_DATA {
            put(&mut out, Field { bytes: &data, ..*f });
        } else {
            put(&mut out, *f);
        }
    }
    Some(Some((out, dims.len())))
}

fn dim_field(v: u64) -> Field<'static> {
    Field {
        num: TENSOR_DIMS,
        wire: VARINT,
        varint: v,
        bytes: &[],
    }
}

/// A ValueInfoProto with each fixed dimension of `from` made `to`.
fn resize_value(v: &[u8], from: usize, to: usize) -> Option<Vec<u8>> {
    along(
        v,
        &[VALUE_TYPE, TYPE_TENSOR, TENSOR_TYPE_SHAPE, SHAPE_DIM],
        &|d| {
            let mut out = Vec::with_capacity(d.len());
            for f in fields(d)? {
                let fixed = f.num == DIM_VALUE && f.wire == VARINT && f.varint == from as u64;
                let varint = if fixed { to as u64 } else { f.varint };
                put(&mut out, Field { varint, ..f });
            }
            Some(out)
        },
    )
}

/// `msg` with `change` applied to each message found down the path of field numbers `path`.
fn along(msg: &[u8], path: &[u32], change: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    let Some((&first, rest)) = path.split_first() else {
        return change(msg);
    };
    map_len(msg, |n, inner| {
        if n == first {
            along(inner, rest, change).map(Some)
        } else {
            Some(None)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(num: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put(
            &mut out,
            Field {
                num,
                wire: LEN,
                varint: 0,
                bytes,
            },
        );
        out
    }

    fn var(num: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put(
            &mut out,
            Field {
                num,
                wire: VARINT,
                varint: v,
                bytes: &[],
            },
        );
        out
    }

    fn floats(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|f| f.to_le_bytes()).collect()
    }

    /// A float tensor as ONNX writes it: dims, data type, name, raw data.
    fn tensor(name: &str, dims: &[u64], data: &[f32]) -> Vec<u8> {
        let mut t: Vec<u8> = dims.iter().flat_map(|&d| var(TENSOR_DIMS, d)).collect();
        t.extend(var(TENSOR_DATA_TYPE, FLOAT));
        t.extend(len(8, name.as_bytes()));
        t.extend(len(TENSOR_RAW_DATA, &floats(data)));
        t
    }

    /// A value info "out" of shape [batch, 4].
    fn value(classes: u64) -> Vec<u8> {
        let batch = len(SHAPE_DIM, &len(2, b"batch"));
        let fixed = len(SHAPE_DIM, &var(DIM_VALUE, classes));
        let shape = len(TENSOR_TYPE_SHAPE, &[batch, fixed].concat());
        let ty = len(TYPE_TENSOR, &[var(1, FLOAT), shape].concat());
        [len(1, b"out"), len(VALUE_TYPE, &ty)].concat()
    }

    fn model(w: &[f32], b: &[f32], classes: u64, extra: &[u8]) -> Vec<u8> {
        let graph = [
            len(1, b"a node"),
            len(GRAPH_INITIALIZER, &tensor("w", &[2, classes], w)),
            len(GRAPH_INITIALIZER, &tensor("b", &[classes], b)),
            len(GRAPH_INITIALIZER, &tensor("other", &[3], &[7.0, 8.0, 9.0])),
            len(GRAPH_OUTPUT, &value(classes)),
            extra.to_vec(),
        ]
        .concat();
        let entry = [len(ENTRY_KEY, b"character"), len(ENTRY_VALUE, b"a\nb\nc")].concat();
        [
            var(1, 10),
            len(MODEL_GRAPH, &graph),
            len(MODEL_METADATA, &entry),
        ]
        .concat()
    }

    #[test]
    fn the_classifier_keeps_only_the_classes_kept_and_everything_else_is_copied() {
        let w = [0.0, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0];
        let b = [0.5, 1.5, 2.5, 3.5];
        let m = model(&w, &b, 4, &[]);
        let cut = keep_classes(&m, 4, &[0, 2, 3]).expect("cut");
        assert_eq!(
            cut,
            model(&[0.0, 2.0, 3.0, 10.0, 12.0, 13.0], &[0.5, 2.5, 3.5], 3, &[])
        );
        assert_eq!(metadata(&cut, "character").as_deref(), Some("a\nb\nc"));
        assert_eq!(metadata(&cut, "nothing"), None);
        // Every class kept: the same bytes.
        assert_eq!(keep_classes(&m, 4, &[0, 1, 2, 3]).as_deref(), Some(&m[..]));
    }

    #[test]
    fn a_model_it_cannot_cut_is_left_alone() {
        let w = [0.0; 8];
        let b = [0.0; 4];
        let m = model(&w, &b, 4, &[]);
        // Not the class count of any tensor, an index past it, unsorted, nothing kept.
        assert!(keep_classes(&m, 5, &[0]).is_none());
        assert!(keep_classes(&m, 4, &[4]).is_none());
        assert!(keep_classes(&m, 4, &[2, 1]).is_none());
        assert!(keep_classes(&m, 4, &[]).is_none());
        // A second classifier of that width: which one is meant is not known.
        let twice = model(
            &w,
            &b,
            4,
            &len(GRAPH_INITIALIZER, &tensor("w2", &[2, 4], &w)),
        );
        assert!(keep_classes(&twice, 4, &[0]).is_none());
        // Not a protobuf message at all, or cut short.
        assert!(keep_classes(b"\xff\xff\xff", 4, &[0]).is_none());
        assert!(keep_classes(&m[..m.len() - 3], 4, &[0]).is_none());
        assert_eq!(metadata(b"\x0f", "character"), None);
    }
}

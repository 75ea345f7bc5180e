"""Turns pocketsphinx's quantised sendump back into a sphinxtrain mixture_weights file (the
Debian model ships only the sendump; bw and map_adapt need the weights)."""
import struct, sys, array
src, dst = sys.argv[1], sys.argv[2]
f = open(src, 'rb'); fmt = '<I'
def rint():
    global fmt
    b = f.read(4); n = struct.unpack(fmt, b)[0]
    if n > 65536: fmt = '>I'; n = struct.unpack(fmt, b)[0]
    return n
def rstr():
    n = rint()
    return None if n == 0 else f.read(n)[:-1].decode()
hdr = {}
title = rstr()
while True:
    h = rstr()
    if h is None: break
    k, *v = h.split()
    hdr[k] = v[0] if v else ''
shift = int(hdr.get('mixw_shift', 10)); nfeat = int(hdr.get('feature_count', 1))
print(title, hdr, file=sys.stderr)
if int(hdr.get('cluster_count', 0)) == 0:
    ndens = rint(); nsen = rint()
else:
    raise SystemExit('clustered sendump not handled')
print('densities', ndens, 'senones', nsen, 'features', nfeat, file=sys.stderr)
# w[sen][feat][dens]
w = [[[0.0] * ndens for _ in range(nfeat)] for _ in range(nsen)]
for i in range(nfeat):
    for j in range(ndens):
        row = f.read(nsen)
        for s in range(nsen):
            w[s][i][j] = 1.0001 ** (-(row[s] << shift))
rest = f.read()
print('left over bytes', len(rest), file=sys.stderr)
out = array.array('f')
for s in range(nsen):
    for i in range(nfeat):
        t = sum(w[s][i]) or 1.0
        out.extend(x / t for x in w[s][i])
o = open(dst, 'wb')
head = b's3\nversion 1.0\n'
lsb = (len(head) + len(b'endhdr\n')) & 3
head += (b' ' * (4 - lsb) if lsb else b'') + b'endhdr\n'
o.write(head); o.write(struct.pack('=i', 0x11223344))
o.write(struct.pack('=IIII', nsen, nfeat, ndens, nsen * nfeat * ndens))
out.tofile(o)

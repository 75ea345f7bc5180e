"""Synthesises the adaptation corpus: commands of voxdesk's grammar (and a few other sentences) in
voices the bench does not use, each clean and under noise at several SNRs; writes raw PCM16 16 kHz
files, a fileids list and a transcription for sphinxtrain's bw."""
import subprocess, array, math, random, sys, os
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
tag = sys.argv[1]  # output subdir
voices = [v.split(':') for v in sys.argv[3].split(',')]
conds = [float(x) for x in sys.argv[4].split(',')]   # SNRs; 200 = clean
noises = sys.argv[5].split(',')
n_sent = int(sys.argv[6])
nums = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
labels = nums + ["plus","minus","times","divided by","equals","square root","pi","sine","cosine","tangent","log","downloads","documents","music","pictures","videos","desktop","trash","home","file","edit","view","help","save","save as","open","close","clear","point","percent"]
keys = ["enter","escape","tab","space","backspace","delete","up","down","left","right","home","end","page up","page down"] + ["f %s" % n for n in nums[1:13]] + list("abcdefghijklmnopqrstuvwxyz")
mods = ["control","alt","shift","super"]
tw = "hello world yes no okay test the a an and to of in on it is for with file name new my your this that please thanks thank you good morning night hi dear from search note document folder email report today".split()
general = ["what is the weather like today","please tell me a joke about computers","i think we should go home now","the quick brown fox jumps over the lazy dog","can you open the window for me","let me see what happens next","she sells sea shells by the sea shore","how much time do we have left","this is a test of the system","we will meet again tomorrow morning"]
def cmd():
    r = random.random()
    L = lambda: random.choice(labels)
    if r < .35: return "click " + L()
    if r < .42: return "double click " + L()
    if r < .48: return "right click " + L()
    if r < .55: return "open " + L() + (" then " + L() if random.random() < .5 else "")
    if r < .65: return "press " + " ".join(random.sample(mods, random.randint(0, 2))) + " " + random.choice(keys)
    if r < .72: return "scroll " + random.choice(["up","down","left","right"]) + (" " + random.choice(nums[1:11]) if random.random() < .5 else "")
    if r < .77: return "wait for " + L()
    if r < .84: return "type " + " ".join(random.choice(tw) for _ in range(random.randint(1, 4)))
    if r < .88: return random.choice(["stop","cancel","go to sleep","wake up","yes","no","yes please","no thanks"])
    if r < .94: return cmd() + " " + random.choice(["and","then",""]) + " " + cmd()
    return random.choice(general)
noise = {n: array.array('h', open(n + '.raw', 'rb').read()) for n in noises}
os.makedirs(tag, exist_ok=True)
ids = open(tag + '.fileids', 'w'); tr = open(tag + '.transcription', 'w')
k = 0
for vi, v in enumerate(voices):
    for s in range(n_sent):
        text = " ".join(cmd().split())
        if v[0] == "flite": subprocess.run(v + ["-t", text, "-o", "t.wav"], check=True)
        else: subprocess.run(v + ["-w", "t.wav", "--", text], check=True)
        raw = subprocess.run(["sox","t.wav","-r","16000","-c","1","-b","16","-e","signed-integer","-t","raw","-"], capture_output=True).stdout
        sp = array.array('h'); sp.frombytes(raw)
        srms = math.sqrt(sum(x*x for x in sp) / max(1, len(sp)))
        pad = random.randint(3200, 8000)
        base = [0.0]*pad + [float(x) for x in sp] + [0.0]*pad
        for snr in conds:
            nz = random.choice(noises); src = noise[nz]
            out = base
            if snr < 100:
                o = random.randint(0, len(src) - len(base) - 1)
                seg = src[o:o+len(base)]
                nrms = math.sqrt(sum(x*x for x in seg) / len(seg))
                g = srms / 10**(snr/20) / nrms
                out = [a + b*g for a, b in zip(base, seg)]
            fid = f"{tag}/u{k:05d}"; k += 1
            array.array('h', [max(-32768, min(32767, int(a))) for a in out]).tofile(open(fid + '.raw', 'wb'))
            ids.write(fid + "\n"); tr.write(f"<s> {text} </s> ({os.path.basename(fid)})\n")
print(k, "utterances")

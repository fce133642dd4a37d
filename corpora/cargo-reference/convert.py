import re, sys, os
from bs4 import BeautifulSoup
from markdownify import MarkdownConverter
D="/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html/cargo/reference"
class C(MarkdownConverter):
    def convert_pre(self, el, text, *a, **k):
        code = el.find("code")
        lang = ""
        if code is not None:
            for c in code.get("class", []):
                if c.startswith("language-"): lang = c[9:]
            body = code.get_text()
        else:
            body = el.get_text()
        body = body.rstrip("\n")
        return f"\n\n```{lang}\n{body}\n```\n\n"
def conv(name):
    html = open(f"{D}/{name}.html", encoding="utf-8").read()
    soup = BeautifulSoup(html, "html.parser")
    main = soup.find("main")
    for s in main.find_all(["script","style"]): s.decompose()
    for h in main.find_all(re.compile("^h[1-6]$")):
        t = h.get_text()
        h.clear(); h.string = t
    for n in main.find_all("nav"): n.decompose()
    md = C(heading_style="ATX", bullets="*", code_language="", escape_underscores=False, escape_asterisks=False, escape_misc=False).convert_soup(main)
    # whitespace cleanup outside code
    out=[]; inc=False
    for line in md.split("\n"):
        if line.startswith("```"): inc = not inc; out.append(line); continue
        out.append(line if inc else line.rstrip())
    md="\n".join(out)
    md=re.sub(r"\n{3,}", "\n\n", md).strip()+"\n"
    return md
if __name__=="__main__" and sys.argv[1:2]!=["build"]:
    for n in sys.argv[1:]:
        md=conv(n); open(f"/tmp/cw/{n}.md","w").write(md); print(n, len(md))

LIST=re.compile(r"^\s*([*+-]|\d+\.)\s")
def join(md):
    lines=md.split("\n"); out=[]; inc=False
    for line in lines:
        if line.startswith("```"):
            inc = not inc; out.append(line); continue
        if inc: out.append(line); continue
        prev = out[-1] if out else ""
        def blocky(l):
            s=l.lstrip()
            return (not s) or s.startswith(("#","|","```")) or (s.startswith(">") and not s[1:].strip())
        s=line.strip()
        if s and out and not blocky(prev) and not prev.startswith("```") and not inc:
            # blockquote continuation
            if line.startswith(">"):
                c=line[1:].strip()
                if prev.startswith(">") and c and not LIST.match(c) and not c.startswith(("#","|","```")) and prev[1:].strip():
                    out[-1]=prev+" "+c; continue
                out.append(line); continue
            if prev.startswith(">"):
                out.append(line); continue
            if not LIST.match(line) and not s.startswith(("#","|","```","<")) and not prev.lstrip().startswith("|"):
                out[-1]=prev+" "+s; continue
        out.append(line)
    return "\n".join(out)

# Driver used to build docs/ (run with a Python that has beautifulsoup4 + markdownify):
NAMES = ("manifest specifying-dependencies overriding-dependencies features profiles workspaces "
         "cargo-targets build-scripts build-script-examples resolver environment-variables config "
         "publishing source-replacement").split()
def build(outdir="docs"):
    os.makedirs(outdir, exist_ok=True)
    for i, n in enumerate(NAMES, 1):
        with open(f"{outdir}/{i:02d}-{n}.md", "w", encoding="utf-8") as f:
            f.write(join(conv(n)))

if __name__=="__main__" and sys.argv[1:2]==["build"]:
    build()

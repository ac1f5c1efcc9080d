"""Real PDF, HTML and Word files built from text: the mixed demo documents of ``data/kb/``, the structured corpus of
``benchmarks/conversion.py`` and the files the tests index. Nothing here is a mock: fpdf2 writes real PDFs (text
layer, outline, metadata, encryption), python-docx real .docx files, and the HTML is a page with navigation,
scripts and a footer around its main content.

    python benchmarks/make_documents.py            # (re)write the three demo files into data/kb/
"""

from __future__ import annotations

import datetime
import io
import sys
import zipfile
from pathlib import Path

Section = tuple[str, list[str]]  # (heading, paragraphs); a paragraph starting with "| " is a table row block


def write_pdf(path: Path, title: str, sections: list[Section], keywords: str = "", encrypt: str | None = None,
              page_per_section: bool = True) -> Path:
    """A PDF with a text layer: one outline entry (bookmark) per section, each section on its own page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_author("Glimmerline documentation team")
    if keywords:
        pdf.set_keywords(keywords)
    pdf.set_creation_date(datetime.datetime(2025, 3, 1, tzinfo=datetime.timezone.utc))  # reproducible bytes
    for n, (heading, paragraphs) in enumerate(sections):
        if n == 0 or page_per_section:
            pdf.add_page()
        pdf.start_section(heading)
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, heading)
        pdf.ln(3)
        pdf.set_font("Helvetica", size=11)
        for para in paragraphs:
            pdf.multi_cell(0, 5.5, para)
            pdf.ln(4)
    if encrypt:
        pdf.set_encryption(owner_password=encrypt + "-owner", user_password=encrypt)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def raw_pdf(content: bytes, page_attrs: bytes = b"") -> bytes:
    """A one-page letter PDF (Helvetica) whose page draws ``content``, written by hand so the text operators are exact;
    ``page_attrs`` are added to the page dictionary (``b"/Rotate 90"``: shown turned)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] " + page_attrs + b" /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def write_scanned_pdf(path: Path) -> Path:
    """A PDF whose page is only an image (what a scanner makes): no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (600, 200), "white")
    ImageDraw.Draw(image).text((20, 80), "Scanned refund policy: 30 days", fill="black")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    pdf = FPDF()
    pdf.add_page()
    pdf.image(buf, x=10, y=10, w=180)
    pdf.output(str(path))
    return path


def _html_block(text: str) -> str:
    from html import escape

    if text.startswith("| "):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
                if line.strip() and not set(line.strip()) <= set("|-: ")]
        head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if text.startswith("```"):
        return f"<pre><code>{escape(text.strip('`').strip())}</code></pre>"
    return f"<p>{escape(text)}</p>"


def write_html(path: Path, title: str, sections: list[Section], meta: dict[str, str] | None = None) -> Path:
    """An HTML page: navigation, a script and a footer around ``<main>`` with ``<h2>`` sections."""
    from html import escape

    metas = "".join(f'<meta name="{escape(k)}" content="{escape(v)}">' for k, v in (meta or {}).items())
    body = "".join(f"<h2>{escape(h)}</h2>" + "".join(_html_block(p) for p in paras) for h, paras in sections)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>{metas}"
            f"<script>document.title = 'tracking'; fetch('/collect');</script></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/shop'>Shop</a> <a href='/support'>Support</a> Sign in</nav>"
            f"<main><article><h1>{escape(title)}</h1>{body}</article></main>"
            f"<footer>© 2025 Glimmerline. Cookie settings. Imprint. Careers.</footer></body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def write_docx(path: Path, title: str, sections: list[Section], status: str = "", keywords: str = "") -> Path:
    """A Word file: a Title paragraph, one "Heading 1" per section, paragraphs and tables."""
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.core_properties.author = "Glimmerline legal team"
    document.core_properties.created = document.core_properties.modified = datetime.datetime(2025, 3, 1)
    if status:
        document.core_properties.content_status = status
    if keywords:
        document.core_properties.keywords = keywords
    document.add_paragraph(title, style="Title")
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for para in paragraphs:
            if para.startswith("| "):
                rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in para.splitlines()
                        if line.strip() and not set(line.strip()) <= set("|-: ")]
                table = document.add_table(rows=len(rows), cols=len(rows[0]))
                for r, row in enumerate(rows):
                    for c, cell in enumerate(row):
                        table.cell(r, c).text = cell
            else:
                document.add_paragraph(para)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def write_zip_bomb_docx(path: Path, unpacked_bytes: int = 300_000_000) -> Path:
    """A .docx-named zip whose document.xml inflates to ``unpacked_bytes`` (a few hundred KB on disk)."""
    chunk = b"<w:t>" + b"A" * (1 << 20) + b"</w:t>"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as fh:
            for _ in range(unpacked_bytes // len(chunk)):
                fh.write(chunk)
    return path


# -- the mixed demo documents of data/kb (invented, like the rest of the corpus) ----------------------------------
SECURITY = ("Glimmerline security whitepaper", [
    ("Encryption", [
        "Traffic between the hub and Glimmerline Cloud is encrypted with TLS 1.3. The hub refuses older protocol "
        "versions and pins the certificate of Glimmerline Cloud, so a network operator cannot read or change the "
        "traffic even with a certificate it issued itself.",
        "Traffic between the app and the hub on the local network is encrypted with a key that the hub and the app "
        "agree on when the hub is paired. The key never leaves the two devices.",
    ]),
    ("Firmware signing", [
        "Every firmware image is signed with an Ed25519 key that is kept in a hardware security module. The hub "
        "checks the signature before it installs an update and keeps the previous image until the new one has "
        "started once.",
    ]),
    ("Reporting a vulnerability", [
        "Security researchers can report a vulnerability to security@glimmerline.example. The security team "
        "confirms each report within 5 working days.",
        "The Glimmerline bug bounty pays up to 2,500 euros for a critical vulnerability in the hub firmware.",
    ]),
])

HUB_PRO = ("Glimmerline Hub Pro datasheet", [
    ("Overview", [
        "The Hub Pro is the Glimmerline hub for large homes and small offices. It controls up to 150 devices and "
        "runs scenes locally when the internet connection is down.",
    ]),
    ("Power", [
        "The Hub Pro has a built-in battery that keeps it running for 4 hours during a power cut. It is powered "
        "by the supplied 12 V adapter.",
    ]),
    ("Specifications", [
        "| Property | Value |\n|---|---|\n| SKU | GLN-HUB-PRO |\n| Radios | Zigbee 3.0, Thread, Bluetooth LE |\n"
        "| Operating temperature | 0 to 40 °C |\n| Weight | 310 g |",
    ]),
])

SLA = ("Glimmerline Cloud service level agreement", [
    ("Availability", [
        "Glimmerline Cloud is available at least 99.9% of each calendar month, measured at the edge of the "
        "Glimmerline network. Planned maintenance announced 48 hours ahead does not count as downtime.",
    ]),
    ("Service credits", [
        "If monthly availability falls below 99.9%, a Beacon customer receives a service credit on the next "
        "invoice. The credit depends on the availability reached:",
        "| Monthly availability | Service credit |\n|---|---|\n| below 99.9% | 10% of the monthly fee |\n"
        "| below 99.0% | 25% of the monthly fee |\n| below 95.0% | 50% of the monthly fee |",
    ]),
    ("Claims", [
        "A service credit must be claimed through the support portal within 30 days after the end of the month in "
        "which the downtime happened.",
    ]),
])


def write_demo(folder: Path) -> list[Path]:
    """The three mixed demo files of ``data/kb``."""
    return [
        write_pdf(folder / "security-whitepaper.pdf", *SECURITY, keywords="status: current"),
        write_html(folder / "hub-pro-datasheet.html", *HUB_PRO, meta={"status": "current", "product": "Hub Pro"}),
        write_docx(folder / "service-level-agreement.docx", *SLA, status="current"),
    ]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data" / "kb"
    for p in write_demo(target):
        print(f"wrote {p} ({p.stat().st_size:,} bytes)")

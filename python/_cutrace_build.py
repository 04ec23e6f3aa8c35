"""A PEP 517 build backend for the `cutrace` package, standard library only.

`pip install ./python` needs nothing from a package index: machines without one (a GPU cluster,
CI) install the package the same way. It builds a pure-Python wheel of the `cutrace/` package,
an sdist, and (PEP 660) an editable wheel that points at this directory. The metadata comes from
the [project] table of pyproject.toml (simple `key = "value"` lines only).
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "cutrace"
TAG = "py3-none-any"


def _project():
    fields, section = {}, None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]").strip()
            elif section == "project":
                m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*"([^"]*)"\s*$', line)
                if m:
                    fields[m.group(1)] = m.group(2)
    for key in ("name", "version"):
        if key not in fields:
            raise RuntimeError("pyproject.toml: [project] %s missing" % key)
    return fields


def _dist(p):
    return "%s-%s" % (p["name"].replace("-", "_"), p["version"])


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if "description" in p:
        lines.append("Summary: " + p["description"])
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    text = "\n".join(lines) + "\n"
    readme = os.path.join(HERE, p.get("readme", "README.md"))
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8") as f:
            text = text.replace("\n", "\nDescription-Content-Type: text/markdown\n", 1)
            text += "\n" + f.read()
    return text


def _dist_info(p):
    """{name: bytes} of the .dist-info directory, RECORD excluded."""
    info = _dist(p) + ".dist-info/"
    return {
        info + "METADATA": _metadata(p).encode("utf-8"),
        info + "WHEEL": ("Wheel-Version: 1.0\nGenerator: _cutrace_build\nRoot-Is-Purelib: true\n"
                         "Tag: %s\n" % TAG).encode("utf-8"),
        info + "top_level.txt": (PACKAGE + "\n").encode("utf-8"),
    }


def _package_files():
    out = {}
    root = os.path.join(HERE, PACKAGE)
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, HERE).replace(os.sep, "/")] = f.read()
    return out


def _write_wheel(directory, files, p):
    files = dict(files)
    files.update(_dist_info(p))
    record = _dist(p) + ".dist-info/RECORD"
    rows = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    rows.append(record + ",,")
    files[record] = ("\n".join(rows) + "\n").encode("utf-8")
    wheel = "%s-%s.whl" % (_dist(p), TAG)
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


# ---- PEP 517 / PEP 660 hooks -----------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    for name, data in _dist_info(p).items():
        path = os.path.join(metadata_directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return _dist(p) + ".dist-info"


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files(), _project())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    pth = {"__editable__.%s.pth" % _dist(p): (HERE + "\n").encode("utf-8")}
    return _write_wheel(wheel_directory, pth, p)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = _dist(p)
    names = ["pyproject.toml", "_cutrace_build.py", "README.md"] + sorted(_package_files())
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        pkg_info = _metadata(p).encode("utf-8")
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
        for name in names:
            src = os.path.join(HERE, name)
            if os.path.isfile(src):
                tar.add(src, arcname=base + "/" + name, recursive=False)
    return os.path.basename(path)

"""The rooms' include rules (docs/architecture.md), read from the sources: no feature includes
another, jobs/ and render/ include no feature, the shell names no feature outside the registry
(so a new panel is its folder plus one registry row), core/model/ does not reach up into
config/, and the enums every family shares carry no Hf prefix."""
import pathlib
import re
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUI = ROOT / "app" / "gui"
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def includes(path):
    return INCLUDE.findall(path.read_text(encoding="utf-8"))


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".h", ".cpp"))


def registry_rows():
    """The feature registry's row names and the hooks each row names."""
    text = (GUI / "shell" / "feature_registry.cpp").read_text(encoding="utf-8")
    table = text[text.index("kFeatures[] = {"):text.index("// clang-format on")]
    rows = re.findall(r'^\s*\{"(\w+)",(.*)\},\s*$', table, re.M)
    return {name: set(re.findall(r"\b[a-z]\w*[A-Z]\w*\b", rest)) for name, rest in rows}


def feature_names():
    """Every state struct and function a feature header declares."""
    names = set()
    for header in (GUI / "features").rglob("*.h"):
        text = header.read_text(encoding="utf-8")
        names |= set(re.findall(r"^struct (\w+State) \{", text, re.M))
        names |= set(re.findall(r"^[A-Za-z][\w:<>,* &]*?[ *&](\w+)\(", text, re.M))
    return names


class IncludeRules(unittest.TestCase):
    def test_no_feature_includes_another(self):
        for path in sources(GUI / "features"):
            own = path.relative_to(GUI / "features").parts[0]
            for target in includes(path):
                if target.startswith("gui/features/"):
                    self.assertEqual(target.split("/")[2], own, f"{path.relative_to(ROOT)} includes {target}")

    def test_jobs_and_render_include_no_feature_and_no_app_state(self):
        for room in ("jobs", "render"):
            for path in sources(GUI / room):
                for target in includes(path):
                    self.assertFalse(target.startswith("gui/features/"), f"{path.relative_to(ROOT)} includes {target}")
                    self.assertNotEqual(target, "gui/shell/app_state.h", f"{path.relative_to(ROOT)} takes the whole AppState")

    def test_the_shell_includes_features_only_in_the_registry(self):
        for path in sources(GUI / "shell"):
            if path.name == "feature_registry.cpp":
                continue
            for target in includes(path):
                self.assertFalse(target.startswith("gui/features/"), f"{path.relative_to(ROOT)} includes {target}")

    def test_the_shell_names_no_feature_outside_the_registry(self):
        """Layout, shortcuts and the app state reach features through the registry's rows."""
        rows = registry_rows()
        self.assertIn("mask", rows)  # the table was read
        self.assertIn("maskHeight", rows["mask"])
        names = feature_names()
        self.assertIn("StepperState", names)
        self.assertIn("drawMaskPanel", names)
        for path in sources(GUI / "shell"):
            if path.name == "feature_registry.cpp":
                continue
            code = re.sub(r"//.*", "", path.read_text(encoding="utf-8"))  # comments may say why
            words = set(re.findall(r"\b\w+\b", code))
            self.assertEqual(words & names, set(), f"{path.relative_to(ROOT)} names a feature")
            panels = re.findall(r'(?:panelRect|beginPanelWindow|drawPanelParts?)\([^)]*"(\w+)"', code)
            self.assertEqual(panels, [], f"{path.relative_to(ROOT)} names a panel")

    def test_core_model_does_not_include_config(self):
        for path in sources(ROOT / "core" / "model"):
            for target in includes(path):
                self.assertFalse(target.startswith("config/"), f"{path.relative_to(ROOT)} includes {target}")

    def test_shared_family_enums_have_no_hf_prefix(self):
        for path in sources(ROOT / "core"):
            found = re.search(r"enum class Hf\w+", path.read_text(encoding="utf-8"))
            self.assertIsNone(found, f"{path.relative_to(ROOT)}: {found and found.group(0)}")


if __name__ == "__main__":
    unittest.main()

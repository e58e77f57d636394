import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # refresh_notebooks is importable by the tests

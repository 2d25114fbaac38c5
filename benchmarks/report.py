# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Render a saved run again: ``python -m benchmarks.report PATH [--rst]``.

The targets are judged again (:mod:`benchmarks.targets`) on the JSON-able
results dict that :mod:`benchmarks.run` writes, and rendered as Markdown
or, with ``--rst``, as the tables of the performance page
(:mod:`benchmarks.tables`).
"""

import argparse
import json
import sys

from benchmarks import tables
from benchmarks import targets


def main(argv=None):
    """Render a saved results file again."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('path')
    parser.add_argument('--rst', action='store_true')
    args = parser.parse_args(argv)
    with open(args.path) as f:
        results = json.load(f)
    verdicts = targets.evaluate(results)
    render = tables.render_rst if args.rst else tables.render_markdown
    sys.stdout.write(render(results, verdicts) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())

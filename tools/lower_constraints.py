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
"""Write the constraints of ``tox -e lower-constraints``.

Usage: ``lower_constraints.py LOWER UPPER OUT``

Every pin of LOWER (``lower-constraints.txt``: the direct requirements at
their bounds), then every pin of UPPER (the oldest series'
upper-constraints) for the packages LOWER does not name, so that the
transitive dependencies are those of a real deployment of that series.
pip refuses two different pins of one package, hence the merge.
"""

import re
import sys


def _name(line):
    """The normalized project name of a constraint line, or None."""
    line = line.split('#', 1)[0].strip()
    match = re.match(r'[A-Za-z0-9][A-Za-z0-9._-]*', line)
    return re.sub(r'[-_.]+', '-', match.group(0)).lower() if match else None


def merge(lower_lines, upper_lines):
    lower = [line.rstrip('\n') for line in lower_lines]
    names = {_name(line) for line in lower} - {None}
    kept = [line.rstrip('\n') for line in upper_lines
            if _name(line) not in names]
    return lower + kept


def main(argv):
    lower, upper, out = argv
    with open(lower) as f_lower, open(upper) as f_upper:
        lines = merge(f_lower, f_upper)
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main(sys.argv[1:])

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
"""Field tables and the whole schema of the scenario format, from the code.

``.. scenario-fields:: hosts.children`` renders the fields of one kind of
item of :data:`nova_image_traits.simulate.schema.SCHEMA` (no argument: the
top level); ``.. scenario-schema::`` prints the schema as JSON.
"""

import json

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils import statemachine

from nova_image_traits.simulate import schema


def _record(path):
    record = schema.SCHEMA
    for name in filter(None, path.split('.')):
        record = record['properties'][name]['items']
    return record


def _default(name, spec, required):
    if name in required:
        return 'required'
    value = spec.get('default')
    if value in ([], {}, '', None):
        return 'none'
    return '``%s``' % json.dumps(value)


class ScenarioFields(Directive):
    optional_arguments = 1

    def run(self):
        record = _record(self.arguments[0] if self.arguments else '')
        required = record.get('required', [])
        lines = ['.. list-table::', '   :header-rows: 1',
                 '   :widths: 18 14 10 58', '',
                 '   * - Field', '     - Type', '     - Default',
                 '     - Meaning']
        for name, spec in record['properties'].items():
            lines += ['   * - ``%s``' % name,
                      '     - %s' % schema.expected(spec),
                      '     - %s' % _default(name, spec, required),
                      '     - %s' % spec.get('description', '')]
        node = nodes.section()
        self.state.nested_parse(statemachine.StringList(lines),
                                self.content_offset, node)
        return node.children


class ScenarioSchema(Directive):

    def run(self):
        text = json.dumps(schema.SCHEMA, indent=2)
        block = nodes.literal_block(text, text)
        block['language'] = 'json'
        return [block]


def setup(app):
    app.add_directive('scenario-fields', ScenarioFields)
    app.add_directive('scenario-schema', ScenarioSchema)
    return {'parallel_read_safe': True}

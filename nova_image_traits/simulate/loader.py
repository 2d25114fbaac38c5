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
"""Read YAML remembering where every value is, for one-line errors.

:func:`parse` returns plain YAML data whose mappings and sequences also
know the line of each key, value and item, so that an error found later
(by the schema, or by the cross references) can name its line.
"""

import yaml

from nova_image_traits import cli
from nova_image_traits import traits as nit_traits


class ScenarioError(cli.UsageError):
    """A scenario that cannot be used, with where and why.

    :param source: the file name (or ``<string>``)
    :param line: the 1-based line number, or None
    :param field: the dotted path of the field at fault, or None
    :param message: what is wrong
    """

    def __init__(self, source, line, field, message):
        self.line = line
        self.field = field
        self.message = message
        where = source if line is None else '%s:%d' % (source, line)
        text = message if field is None else '%s: %s' % (field, message)
        super().__init__('%s: %s' % (where, text))


class Mapping(dict):
    """A YAML mapping that remembers where its keys and values are.

    :ivar line: the 1-based line where the mapping starts
    :ivar key_lines: key to the line of that key
    :ivar value_lines: key to the line of its value
    """


class Sequence(list):
    """A YAML sequence that remembers where its items are.

    :ivar line: the 1-based line where the sequence starts
    :ivar item_lines: the line of each item, in order
    """


class _Loader(yaml.SafeLoader):
    """A SafeLoader recording line numbers and refusing duplicate keys."""

    source = '<string>'


def _construct_mapping(loader, node):
    data = Mapping()
    data.line = node.start_mark.line + 1
    data.key_lines, data.value_lines = {}, {}
    yield data
    explicit = [k for k, _v in node.value
                if k.tag != 'tag:yaml.org,2002:merge']
    loader.flatten_mapping(node)
    # NOTE(founders): flatten_mapping puts the pairs of merge keys (<<)
    # first; an explicit key may override them, as YAML allows.
    merged, seen = len(node.value) - len(explicit), set()
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise ScenarioError(loader.source, line, None,
                                'a mapping key must be a plain value')
        if index >= merged:
            if key in seen:
                raise ScenarioError(loader.source, line, str(key),
                                    'duplicate key (first on line %d)'
                                    % data.key_lines[key])
            seen.add(key)
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = line
        data.value_lines[key] = value_node.start_mark.line + 1


def _construct_sequence(loader, node):
    data = Sequence()
    data.line = node.start_mark.line + 1
    data.item_lines = [n.start_mark.line + 1 for n in node.value]
    yield data
    data.extend(loader.construct_object(n, deep=True) for n in node.value)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                        _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
                        _construct_sequence)


def kind(value):
    """Say what a YAML value is, for error messages: 'a list'..."""
    if isinstance(value, str):
        return 'a string %s' % nit_traits.quote(value)
    # NOTE(founders): bool before int, of which it is a subclass.
    for cls, text in ((type(None), 'nothing'), (bool, 'a boolean'),
                      (int, 'an integer'), (float, 'a number'),
                      (dict, 'a mapping'), (list, 'a list')):
        if isinstance(value, cls):
            return text
    return 'a %s' % type(value).__name__


def locate(data, path, key=False):
    """Return the line and the dotted field name of the value at ``path``.

    The name is like ``hosts[0].traits[1]``, None for the document itself;
    an integer key of a mapping (``1:`` under ``extra_specs``) is named as
    a key, not an index.

    :param data: the document, as :func:`parse` returns it
    :param path: the keys and indexes from the document's root
    :param key: give the line of the last key rather than of its value
    """
    parent, node, name = None, data, None
    for part in path:
        if isinstance(node, list):
            name = '%s[%d]' % (name, part)
        else:
            name = '%s.%s' % (name, part) if name else str(part)
        parent, node = node, node[part]
    if parent is None:
        return getattr(data, 'line', None) or 1, None
    if isinstance(parent, Sequence):
        return parent.item_lines[path[-1]], name
    return (parent.key_lines if key else parent.value_lines)[path[-1]], name


def parse(text, source):
    """Parse one YAML document, keeping the lines.

    :raises ScenarioError: for invalid YAML or duplicate keys
    """
    loader = _Loader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = e.problem or e.context or 'invalid YAML'
        raise ScenarioError(source, line, None,
                            'invalid YAML: %s' % problem)
    except yaml.YAMLError as e:
        raise ScenarioError(source, None, None, 'invalid YAML: %s' % e)
    finally:
        loader.dispose()

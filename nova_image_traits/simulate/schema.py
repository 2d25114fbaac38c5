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
"""The JSON schema of a scenario, and its errors as one line each.

:data:`SCHEMA` is the format: every field's type, default and meaning.
The documentation's field tables are generated from it. What a schema
cannot say (unique names, references between items) is checked by
:mod:`.scenario`.
"""

import difflib
import re

import jsonschema
import os_resource_classes

from nova_image_traits.cli import derive
from nova_image_traits.cli import isolation as cli_isolation
from nova_image_traits.simulate import loader
from nova_image_traits import traits as nit_traits

_CUSTOM_RC = re.compile(r'^CUSTOM_[A-Z0-9_]+$')


def _string(description):
    return {'type': 'string', 'pattern': r'\S', 'description': description}


def _count(default, description):
    return {'type': 'integer', 'minimum': 0, 'default': default,
            'description': description}


def _list(items, description, **extra):
    return dict({'type': ['array', 'null'], 'items': items, 'default': [],
                 'description': description}, **extra)


def _map(keys, values, description):
    return {'type': ['object', 'null'], 'propertyNames': keys,
            'additionalProperties': values, 'default': {},
            'description': description}


def _record(title, required, **properties):
    return {'type': 'object', 'title': title, 'required': required,
            'additionalProperties': False, 'properties': properties}


_TEXT = {'type': ['string', 'null'], 'default': '',
         'description': 'Free text.'}
_TRAIT = {'type': 'string', 'format': 'trait'}
_TRAITS = _list(_TRAIT, "The provider's traits: standard (os-traits) or "
                '``CUSTOM_``.')
_INVENTORY = _map({'type': 'string', 'format': 'resource-class'},
                  {'type': 'integer', 'minimum': 1},
                  'Resource class to total, each >= 1.')
#: Extra specs and image properties: any scalar, as nova's string.
STRINGS = {'type': ['string', 'number', 'boolean']}

CHILD = _record(
    'child', ['name'],
    name=_string("The provider's name, unique in the scenario."),
    parent=_string('The name of an *earlier* child of the same host, for '
                   'deeper trees (default: the root).'),
    inventory=_INVENTORY, traits=_TRAITS)

HOST = _record(
    'host', ['name'],
    name=_string("The compute node's provider name (nova's hypervisor "
                 "hostname)."),
    vcpus=_count(8, '``VCPU`` of the root; 0 for none.'),
    memory_mb=_count(16384, '``MEMORY_MB`` of the root; 0 for none.'),
    disk_gb=_count(100, '``DISK_GB`` of the root; 0 for none, for example '
                   'when the disk comes from a sharing provider.'),
    traits=_list(_TRAIT, 'Traits of the root provider.'),
    aggregates=_list(_string('An aggregate name.'), 'Aggregate names. A '
                     'host shares the inventory of the sharing providers '
                     'of its aggregates.'),
    children=_list(CHILD, 'Nested providers, see below.'),
    full={'type': 'boolean', 'default': False,
          'description': 'After every server is placed, consume the '
          'remaining ``VCPU`` of every provider of the tree that has some, '
          'so that no boot fits.'})

SHARING_PROVIDER = _record(
    'sharing provider', ['name', 'aggregates', 'inventory'],
    name=_string("The provider's name."),
    aggregates=_list(_string('An aggregate name.'), 'Aggregate names, at '
                     "least one; hosts in one of them can use this "
                     "provider's inventory.",
                     type='array', minItems=1),
    inventory=_INVENTORY,
    traits=_list(_TRAIT, 'Traits; ``MISC_SHARES_VIA_AGGREGATE`` is always '
                 'added.'))

FLAVOR = _record(
    'flavor', ['name'], name=_string("The flavor's name."),
    vcpus=_count(1, 'As in nova.'), memory_mb=_count(512, 'As in nova.'),
    root_gb=_count(1, 'As in nova.'), ephemeral_gb=_count(0, 'As in nova.'),
    swap=_count(0, 'In MiB, as in nova.'),
    extra_specs=_map(_string('An extra spec.'), STRINGS,
                     "Nova's extra specs; numbers and booleans become "
                     "nova's strings (``1``, ``true``). The placement ones "
                     'matter: ``resources[N]:<RC>``, ``trait[N]:<NAME>``, '
                     '``group_policy``, ``hw:cpu_policy``.'))

IMAGE = _record(
    'image', ['name'], name=_string("The image's name."),
    disk_format=dict(_string("Glance's ``disk_format`` (``raw``, "
                             '``qcow2``...), which nova turns into a '
                             '``COMPUTE_IMAGE_TYPE_`` trait with '
                             '``[scheduler] '
                             'query_placement_for_image_type_support``.'),
                     type=['string', 'null'], default='qcow2'),
    properties=_map(_string('A property.'), STRINGS,
                    'Glance properties, not validated. Traits are required '
                    'as nova reads them: ``trait:<NAME>: required``; what '
                    'nova derives from the others (``hw_tpm_version``, '
                    '``os_secure_boot``, ``hw_mem_encryption``, '
                    '``hw_cpu_thread_policy``, ``hw_disk_bus``...) is '
                    'judged where nova is importable.'))

#: nova's ``[scheduler]`` options its image request filters read.
SCHEDULER_OPTIONS = derive.SCHEDULER_OPTS

SERVER = _record(
    'server', ['name', 'host', 'flavor', 'image'],
    name=_string("The server's name."), host=_string('The host it runs on.'),
    flavor=_string('Its flavor.'), image=_string('Its current image.'),
    allocations=dict(_map(_string('A provider name.'), _INVENTORY,
                          'Provider name to ``{resource class: amount}``, '
                          "in the host's tree or sharing providers of its "
                          'aggregates. Default: chosen as at boot.'),
                     default=None),
    recorded=dict(_map(_string('A property.'), STRINGS,
                       'The image properties the server recorded when it '
                       "booted or was last rebuilt (nova's ``image_*`` "
                       'system metadata), when its image changed since. '
                       'The server is placed with them, and they are its '
                       'current image. A case rebuilding the server with '
                       'its own image is then judged as the nova-api '
                       'pre-check judges it with ``[image_traits] '
                       'judge_same_image_rebuild``. Without them, such a '
                       'case is judged all the same, where nova and the '
                       'pre-check judge nothing. '
                       "Default: the image's properties."),
                  default=None))

CASE = _record(
    'case', ['name', 'server', 'image'],
    name=_string("The case's name, shown in the table and accepted by "
                 "``simulate --case``."),
    server=_string('The server to rebuild.'),
    image=_string('The new image; the server\'s own image, whose '
                  'properties changed since the server ``recorded`` them, '
                  'for a same-image rebuild.'),
    description=_TEXT,
    scheduler=_map({'enum': list(SCHEDULER_OPTIONS) + [
        cli_isolation.OPTION]}, {'type': 'boolean'},
        "nova's ``[scheduler]`` options for this case, over the "
        "configuration's (``--config-file``): "
        '``image_metadata_prefilter`` and '
        '``query_placement_for_image_type_support``, which '
        "decide what nova's image request filters ask, and "
        '``enable_isolated_aggregate_filtering``, which forbids a boot the '
        "``isolated_aggregates`` its image and flavor do not require."))

SCHEMA = _record(
    'scenario', ['hosts', 'flavors', 'images', 'servers', 'cases'],
    description=_TEXT,
    sharing_providers=_list(SHARING_PROVIDER, 'Providers sharing their '
                            'inventory with the hosts of their aggregates.'),
    hosts=_list(HOST, 'Compute nodes, each the root of a provider tree.'),
    isolated_aggregates=_map(
        _string('An aggregate name.'), _list(_TRAIT, 'Its traits.'),
        "Aggregates isolated for traits: each aggregate's nova metadata "
        'requires (``trait:X=required``) these traits. They count in the '
        "cases with nova's ``[scheduler] "
        'enable_isolated_aggregate_filtering`` on.'),
    flavors=_list(FLAVOR, 'Flavors, with their extra specs.'),
    images=_list(IMAGE, 'Images, with their properties.'),
    servers=_list(SERVER, 'Servers booted on a host with a flavor and an '
                  'image.'),
    cases=_list(CASE, 'Rebuilds to judge: a server and a new image.',
                minItems=1))
SCHEMA['$schema'] = 'https://json-schema.org/draft/2020-12/schema'


class _Invalid(Exception):
    """A format check's reason, which becomes the error's message."""


_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks('trait', raises=_Invalid)
def _check_trait(name):
    if not isinstance(name, str):
        return True
    why = nit_traits.check_trait_name(name)
    if why:
        raise _Invalid('%s is not a valid trait: %s'
                       % (nit_traits.quote(name), why))
    return True


@_FORMATS.checks('resource-class', raises=_Invalid)
def _check_resource_class(name):
    if not isinstance(name, str):
        return True
    if _CUSTOM_RC.match(name) or name in os_resource_classes.STANDARDS:
        return True
    raise _Invalid('%s is neither a standard resource class nor a valid '
                   'CUSTOM_ one' % nit_traits.quote(name))


_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=_FORMATS)


def expected(schema):
    """Say what a field holds: 'an integer >= 0', 'a list'..."""
    if 'enum' in schema:
        return 'one of %s' % ', '.join(map(str, schema['enum']))
    kinds = schema.get('type')
    kinds = [k for k in (kinds if isinstance(kinds, list) else [kinds])
             if k != 'null']
    if kinds == ['integer']:
        return 'an integer >= %d' % schema['minimum']
    if kinds == ['string']:
        return 'a non-empty string' if 'pattern' in schema else 'a string'
    return {'boolean': 'true or false', 'array': 'a list',
            'object': 'a mapping'}.get(kinds[0] if len(kinds) == 1 else '',
                                       'a plain value')


def _where(data, error):
    """Return ``(line, field, message)`` for a ValidationError."""
    path, value, key = list(error.absolute_path), error.instance, False
    if error.validator == 'additionalProperties':
        known = error.schema['properties']
        unknown = min((k for k in value if k not in known),
                      key=lambda k: value.key_lines[k])
        close = difflib.get_close_matches(str(unknown), known, 1)
        path, key = path + [unknown], True
        message = 'unknown field' + (
            '; did you mean %r?' % close[0] if close
            else ' (known fields: %s)' % ', '.join(sorted(known)))
    elif error.validator == 'required':
        missing = [r for r in error.validator_value if r not in value]
        message = 'missing required field %r' % missing[0]
    elif error.validator == 'format' and error.cause is not None:
        message = str(error.cause)
    elif error.validator == 'minItems':
        message = 'expected at least one %s, got none' % error.schema[
            'items'].get('title', 'item')
    else:
        message = 'expected %s, got %s' % (expected(error.schema),
                                           loader.kind(value))
    if 'propertyNames' in error.relative_schema_path:
        # NOTE(founders): jsonschema gives the mapping's path for a bad
        # key; the key itself is the instance.
        path, key = path + [value], True
    return loader.locate(data, path, key) + (message,)


def validate(data, source):
    """Check a parsed scenario against :data:`SCHEMA`.

    :param data: the document, as :func:`.loader.parse` returns it
    :param source: the name used in error messages
    :raises ScenarioError: for the first problem in the file's order
    """
    found = [_where(data, e) for e in _VALIDATOR.iter_errors(data)]
    if found:
        line, field, message = min(found, key=lambda f: (
            f[0] or 0, (f[1] or '').count('.')))
        raise loader.ScenarioError(source, line, field, message)

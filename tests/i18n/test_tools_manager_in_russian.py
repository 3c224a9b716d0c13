"""The Tools Manager in Russian: group labels and descriptions, each function's description,
the settings forms and the Test form read in the page's language; names stay as they are."""

from __future__ import annotations

RU = {"HTTP_ACCEPT_LANGUAGE": "ru"}


def test_the_overview_describes_groups_and_functions_in_russian(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/tools/", **RU).content.decode()
    assert "Кто может пользоваться этими инструментами" in html
    assert "Выполнение командных строк в изолированной рабочей папке беседы." in html  # Shell
    assert "Вернуть текущие дату и время в часовом поясе IANA" in html  # current_time
    assert ">current_time<" in html  # the function's name is the same in every language
    assert "Run command lines in the conversation" not in html


def test_a_groups_settings_form_is_in_russian(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/tools/groups/shell/edit/", **RU).content.decode()
    assert "Настройки: Оболочка" in html
    assert "Сколько может выполняться команда (с)." in html  # a field's help
    assert "Разрешённые команды" in html  # a label derived from the field's name
    assert 'name="allowed_commands"' in html  # …whose form field keeps its name


def test_the_test_form_and_schema_are_in_russian(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/tools/functions/current_time/test/", **RU).content.decode()
    assert "Вернуть текущие дату и время в часовом поясе IANA" in html
    assert "Имя часового пояса IANA" in html  # the argument's description
    assert "Запустить тест" in html
    assert 'name="arg-timezone"' in html


def test_english_is_unchanged_without_a_language(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/tools/").content.decode()
    assert "Run command lines in the conversation" in html

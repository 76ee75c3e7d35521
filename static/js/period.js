// The period form (templates/dashboard/_period.html) on a preset ("Last 30 days"): dates left as the page
// showed them are not sent, so a cluster chosen with Apply keeps the preset (its button marked, ending at
// that cluster's newest job) rather than turning it into those dates. Dates changed are sent: a period
// of one's own. Without this script the dates are always sent, a custom period, as before.
document.querySelectorAll("form.period").forEach((form) => {
  form.addEventListener("formdata", (event) => {
    if (!form.querySelector('input[name="period"]')) return;
    const dates = [...form.querySelectorAll('input[type="date"]')];
    if (dates.every((input) => input.value === input.defaultValue)) {
      dates.forEach((input) => event.formData.delete(input.name));
    } else {
      event.formData.delete("period");
    }
  });
});
